"""The `banach` command: `cli` parses and calls one module per command or group (`init`, `doctor`, `demo`, `status`,
`supervisor` for up, down, ctl and logs, `foreground` for run, `deliver`, `verify`, `systemd`, `plot`), and what it
ships: the bundled example (`example/`) and the supervisord template (`templates/`)."""
