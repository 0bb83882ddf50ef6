"""The dashboard (`banach serve`): one page per question a person asks of a running workspace.

query.py reads (the one place that does), actions.py acts through the loops' own executables, auth.py decides who
may do either, server.py serves it all (aiohttp, jinja2 templates, server-sent events; nothing from outside)."""
