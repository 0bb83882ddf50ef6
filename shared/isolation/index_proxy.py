"""The package index and nothing else, for a build that runs code other people and the agent wrote.

    with IndexProxy(hosts, ports) as proxy:
        argv = sandbox_argv(ws, argv, writable, gateway_relay=proxy.relay)   # a network namespace of its own
        env.update(proxy.environment())                                       # pip and uv find the proxy
    proxy.refused                                                              # what it would not carry

Landlock filters TCP by port, not by address, so a port rule alone lets a setup.py reach port 443 of any host and
send out what it can read. Here the build runs where 127.0.0.1:PORT is this proxy's unix socket and nothing else
answers (shared/isolation/netrelay.py: no route, no DNS); the proxy carries a CONNECT (https) or an absolute-form
request (http) only to a host of `hosts` on a port of `ports`, and answers anything else 403, keeping what was asked
for the error message. Names are resolved here, outside the build. When this process's own environment names a
proxy (HTTPS_PROXY, HTTP_PROXY), connections go on through it.

index_hosts() adds the hosts that pip's and uv's own configuration names (index-url, extra-index-url, find-links,
[[index]]): the operator's settings, read here, never the project's files.
"""
from __future__ import annotations

import base64
import configparser
import os
import socket
import tempfile
import threading
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from urllib.parse import unquote, urlsplit

from shared.export import remove_tree
from shared.isolation.netrelay import pump

PORT = 3128  # inside the build's own network namespace, where nothing else listens
_HEAD_LIMIT = 65536
_HEAD_TIMEOUT = 30.0  # seconds a client may take to send its request's head
MAX_CONNECTIONS = 64  # at once: each is a thread of the role's process, and the build is code nobody vouches for
_PIP_FILES = ("/etc/pip.conf", "/etc/xdg/pip/pip.conf", "~/.config/pip/pip.conf", "~/.pip/pip.conf")
_UV_FILES = ("/etc/uv/uv.toml", "/etc/xdg/uv/uv.toml", "~/.config/uv/uv.toml")
_URL_VARIABLES = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "UV_INDEX_URL", "UV_DEFAULT_INDEX",
                  "UV_INDEX", "UV_EXTRA_INDEX_URL", "UV_FIND_LINKS")


def _hosts_of(urls: Iterable[str]) -> set[str]:
    found = set()
    for url in urls:
        try:
            parts = urlsplit(url.split("=", 1)[-1] if "=" in url.split("://", 1)[0] else url)  # uv's NAME=URL
        except ValueError:
            continue
        if parts.scheme in ("http", "https") and parts.hostname:
            found.add(parts.hostname.lower())
    return found


def _configured_urls(environ: Mapping[str, str]) -> list[str]:
    """Every index URL and find-links location pip's and uv's configuration names (variables and files)."""
    urls: list[str] = [word for name in _URL_VARIABLES for word in environ.get(name, "").split()]
    pip_files = [*_PIP_FILES, *([environ["PIP_CONFIG_FILE"]] if environ.get("PIP_CONFIG_FILE") else [])]
    for name in pip_files:
        parser = configparser.ConfigParser()
        try:
            parser.read(os.path.expanduser(name))
        except configparser.Error:
            continue
        for section in ("global", "install"):
            for key in ("index-url", "extra-index-url", "find-links"):
                urls += parser.get(section, key, fallback="").split()
    uv_files = [*_UV_FILES, *([environ["UV_CONFIG_FILE"]] if environ.get("UV_CONFIG_FILE") else [])]
    for name in uv_files:
        try:
            data = tomllib.loads(Path(os.path.expanduser(name)).read_text())
        except (OSError, tomllib.TOMLDecodeError):
            continue
        for key in ("index-url", "extra-index-url", "find-links"):
            value = data.get(key, [])
            urls += [value] if isinstance(value, str) else [str(v) for v in value]
        urls += [str(index.get("url", "")) for index in data.get("index", []) if isinstance(index, dict)]
    return urls


def index_hosts(configured: Iterable[str], environ: Mapping[str, str] = os.environ) -> set[str]:
    """configured ([env] index_hosts), and the hosts of every index pip's and uv's configuration names."""
    return {host.lower().rstrip(".") for host in configured} | _hosts_of(_configured_urls(environ))


def index_folders(environ: Mapping[str, str] = os.environ) -> list[Path]:
    """The local folders pip's and uv's configuration names as an index or find-links (file:// URLs, plain paths), and
    the certificates it names: what a build in a view of its own must also read."""
    found: list[Path] = []
    for url in _configured_urls(environ):
        value = url.split("=", 1)[-1] if "=" in url.split("://", 1)[0] else url
        path = unquote(urlsplit(value).path) if value.startswith("file://") else value if value.startswith("/") else ""
        if path and os.path.exists(path):
            found.append(Path(path) if os.path.isdir(path) else Path(path).parent)
    for name in ("PIP_CERT", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "UV_CERT"):
        value = environ.get(name, "")
        if value.startswith("/") and os.path.exists(value):
            found.append(Path(value))
    return list(dict.fromkeys(found))


class IndexProxy:
    def __init__(self, hosts: Iterable[str], ports: Iterable[int], folder: Path | None = None) -> None:
        """folder: where its socket's folder is made (default: TMPDIR); a build in a view reaches the socket by a path
        bound into the view, which must be a unix socket address (107 bytes), so give a short folder the build cannot
        write."""
        self.hosts = {host.lower().rstrip(".") for host in hosts}
        self.ports = set(ports)
        self.refused: list[str] = []
        self._folder = Path(tempfile.mkdtemp(prefix="banach-index-", dir=folder))
        self._folder_fd = os.open(self._folder, os.O_PATH | os.O_DIRECTORY)
        direct = self._folder / "proxy.sock"
        self.socket_path = direct if len(os.fsencode(direct)) < 100 else self._through_proc()
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(direct if self.socket_path == direct else f"/proc/self/fd/{self._folder_fd}/proxy.sock"))
        direct.chmod(0o600)
        self._listener.listen(64)
        self._thread = threading.Thread(target=self._serve, name="banach-index-proxy", daemon=True)
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

    def _through_proc(self) -> Path:
        """A unix socket's address holds 107 bytes, and a workspace may lie deeper: the folder is then named through
        this process's descriptor of it, which the relay (a process of this user, in this process's Landlock domain)
        may open; writing a short link elsewhere would need a folder this role may not write."""
        return Path(f"/proc/{os.getpid()}/fd/{self._folder_fd}/proxy.sock")

    @property
    def relay(self) -> tuple[Path, int]:
        return self.socket_path, PORT

    def environment(self) -> dict[str, str]:
        """What points pip and uv at the proxy, and at nothing else."""
        url = f"http://127.0.0.1:{PORT}"
        return {"HTTPS_PROXY": url, "HTTP_PROXY": url, "https_proxy": url, "http_proxy": url, "NO_PROXY": "",
                "no_proxy": "", "ALL_PROXY": "", "all_proxy": ""}

    def allowed(self, host: str, port: int) -> bool:
        host = host.lower().rstrip(".")
        named = host in self.hosts or any(h.startswith(".") and host.endswith(h) for h in self.hosts)
        return named and port in self.ports

    def __enter__(self) -> IndexProxy:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() below
        except OSError:
            pass
        self._listener.close()
        self._thread.join(5)
        os.close(self._folder_fd)
        remove_tree(self._folder)

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if not self._slots.acquire(blocking=False):
                client.close()  # a build that opens more at once than pip or uv ever would gets nothing more
                continue
            threading.Thread(target=self._carry, args=(client,), daemon=True).start()

    def _carry(self, client: socket.socket) -> None:
        try:
            self._answer(client)
        except OSError:
            pass  # the client went away: nothing to tell it
        finally:
            self._slots.release()

    def _answer(self, client: socket.socket) -> None:
        with client:
            client.settimeout(_HEAD_TIMEOUT)
            head, rest = _read_head(client)
            if head == b"\r\n\r\n":
                return  # closed, or sent nothing
            client.settimeout(None)  # a download may pause as long as it likes
            try:
                method, target, _ = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
                tunnel = method == "CONNECT"
                if tunnel:
                    host, _, port_text = target.rpartition(":")
                    host, port = host.strip("[]"), int(port_text)
                else:
                    parts = urlsplit(target)
                    if parts.scheme != "http" or not parts.hostname:
                        raise ValueError(target)
                    host, port = parts.hostname, parts.port or 80
            except ValueError:
                client.sendall(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
                return
            if not self.allowed(host, port):
                self.refused.append(f"{host}:{port}")
                client.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"
                               b"banach: the environment's build may reach the package index only ([env] index_hosts)\n")
                return
            try:
                upstream = _open(host, port, tunnel)
            except OSError as exc:
                client.sendall(f"HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\nbanach: {exc}\n".encode())
                return
            with upstream:
                if tunnel:
                    client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    if rest:
                        upstream.sendall(rest)
                else:
                    upstream.sendall(head + rest)
                back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
                back.start()
                pump(client, upstream)
                back.join()


def _read_head(client: socket.socket) -> tuple[bytes, bytes]:
    """The request's head (through its blank line) and whatever came after it."""
    data = b""
    while b"\r\n\r\n" not in data and len(data) < _HEAD_LIMIT:
        chunk = client.recv(4096)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head + b"\r\n\r\n", rest


def _open(host: str, port: int, tunnel: bool) -> socket.socket:
    """A connection to host:port, or through the proxy this process's environment names."""
    upstream = os.environ.get("https_proxy" if tunnel else "http_proxy") or os.environ.get(
        "HTTPS_PROXY" if tunnel else "HTTP_PROXY", "")
    if not upstream:
        link = socket.create_connection((host, port), timeout=30)
        link.settimeout(None)
        return link
    parts = urlsplit(upstream if "://" in upstream else f"http://{upstream}")
    link = socket.create_connection((parts.hostname or "", parts.port or 8080), timeout=30)
    link.settimeout(None)
    if not tunnel:
        return link  # an absolute-form request goes to the proxy as it is
    auth = ""
    if parts.username:
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        auth = f"Proxy-Authorization: Basic {base64.b64encode(pair).decode()}\r\n"
    link.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n{auth}\r\n".encode())
    answer, _ = _read_head(link)
    if not answer.split(b" ", 2)[1:2] == [b"200"]:
        link.close()
        raise OSError(f"the proxy {parts.hostname}:{parts.port} refused {host}:{port}: {answer.splitlines()[0]!r}")
    return link
