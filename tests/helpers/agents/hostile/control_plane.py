"""Class 8: tries the control plane: every role's key, the supervisor's credentials and configuration,
and the supervisor's socket; then does the right change."""
import os
import socket

from _hostile import WORKSPACE, apply

for path in sorted((WORKSPACE / "state" / "keys").glob("*")) + [WORKSPACE / "state" / "keys" / "build.key"] + \
        sorted((WORKSPACE / "state" / "supervisor").glob("*")):
    if path.suffix in (".log",) or path.name.endswith(".sock"):
        continue
    try:
        path.read_bytes()
        print(f"READ {path}")
    except OSError as exc:
        print(f"DENIED {path}: {exc.strerror}")
sock = WORKSPACE / "state" / "supervisor" / "supervisor.sock"
if sock.exists():
    client = socket.socket(socket.AF_UNIX)
    try:
        here = os.getcwd()
        os.chdir(sock.parent)  # a relative address reaches the socket however deep the workspace is
        try:
            client.connect(sock.name)
        finally:
            os.chdir(here)
        body = '<?xml version="1.0"?><methodCall><methodName>supervisor.stopProcess</methodName>' \
               '<params><param><value><string>plan</string></value></param></params></methodCall>'
        client.sendall(f"POST /RPC2 HTTP/1.0\r\nContent-Type: text/xml\r\nContent-Length: {len(body)}\r\n\r\n{body}".encode())
        print("SUPERVISOR said:", client.recv(200).decode(errors="replace").splitlines()[0])
    except OSError as exc:
        print(f"DENIED supervisor socket: {exc.strerror}")
print("applied", apply())
