"""Isolation: what each role and each child it starts may write, enforced by the OS. The policy (`policy`: the write
table, a role restricting itself, the wrapper's argv), the Landlock binding and wrapper (`sandbox`), the gateway-only
network (`netrelay`) and the users backend's accounts (`users`). Kept free of imports: every sandboxed child starts
with `python -I -m shared.isolation.sandbox`, which loads this package first."""
