"""HOSTILE agent: goes for the dashboard. It tries to read the dashboard's token, to reach its port, and plants
markup in its output and in a file, hoping a page runs it. Bounded: one read, one connection, five seconds.

    dashboard_probe.py TOKEN_FILE PORT
"""
import socket
import sys

token_file, port = sys.argv[1], int(sys.argv[2])
try:
    with open(token_file) as handle:
        print(f"token: READ {handle.read().strip()}")
except OSError as exc:
    print(f"token: unreadable ({exc.__class__.__name__})")
try:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(b"GET /?token=guess HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        print(f"dashboard: REACHED {conn.recv(200)!r}")
except OSError as exc:
    print(f"dashboard: unreachable ({exc.__class__.__name__})")
print("<script>window.pwned = 'by the agent'</script><img src=x onerror=\"window.pwned='img'\">")
with open("textkit/slug.py", "a") as planted:
    planted.write("\n# <script>window.pwned = 'by a diff'</script>\n")
