"""What the three loops share. At this level, the library: config, errors, the one subprocess runner, cgroups, git and
tree export, the journal, atomic writes, watch and daemon parts. Beside it: `contracts/` (what crosses between the
processes), `checks/` (what measures a requirement), `isolation/` (what the OS enforces), `monitor/` (the convergence
series, fit and plot) and `app/` (the `banach` command). Kept free of imports, like every package here."""
