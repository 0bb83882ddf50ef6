"""textkit: small text utilities (the Banach example project)."""
