"""Real servers on loopback for the remote-shard tests, started by the tests.

- ``Nginx``: Debian's nginx serving a directory (range requests, ETags),
  over plain HTTP/1.1 or HTTPS with HTTP/2 under a self-signed certificate
  made at start; its access log records each request's protocol.
- ``MotoS3``: moto's S3-compatible server (``python -m moto.server``) in a
  subprocess, with request signatures checked against an IAM user it creates.
- ``FaultProxy``: an HTTP proxy written here that sits between shardloader
  and either server and injects the faults a network has: connections dropped
  mid-body, 500/503/429 answers, stalls. It logs every request it forwards.

Each helper skips the calling test with a clear reason when its server
software is missing (``scripts/install-deps.sh`` installs it).
"""

from __future__ import annotations

import collections
import http.client
import http.server
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, what: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on port {port} within {timeout} s")


def nginx_version(binary: str) -> tuple[int, ...]:
    """(1, 22, 1) from ``nginx -v`` ("nginx version: nginx/1.22.1", on stderr)."""
    out = subprocess.run([binary, "-v"], capture_output=True, text=True, check=True)
    text = (out.stderr or out.stdout).strip()
    return tuple(int(part) for part in text.rsplit("/", 1)[1].split(".")[:3])


def self_signed_certificate(work: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost (P-256, 1 day),
    made with the ``openssl`` command line: (certificate PEM, key PEM). The
    certificate is its own CA, so it doubles as a CA bundle that trusts it."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("the openssl command line is not installed "
                    "(scripts/install-deps.sh installs it)")
    cert, key = work / "server.crt", work / "server.key"
    subprocess.run([openssl, "req", "-x509", "-newkey", "ec",
                    "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                    "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    return cert, key


class Nginx:
    """nginx serving ``root`` on 127.0.0.1 (``url`` is its base URL).

    With ``tls=True`` it serves HTTPS with HTTP/2 (ALPN "h2") under a
    self-signed certificate made at start; ``ca_bundle`` is that
    certificate's PEM file, the CA file a client must trust. ``requests()``
    reads the access log, which records each request's protocol.
    """

    def __init__(self, root: Path, work: Path, tls: bool = False):
        binary = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
        if binary is None:
            pytest.skip("nginx is not installed (scripts/install-deps.sh installs it)")
        self.port = free_port()
        work.mkdir(parents=True, exist_ok=True)
        self.access_log = work / "access.log"
        listen = f"listen 127.0.0.1:{self.port};"
        self.ca_bundle: Path | None = None
        if tls:
            cert, key = self_signed_certificate(work)
            self.ca_bundle = cert
            # "http2 on;" arrived in nginx 1.25.1; before it, a listen flag.
            if nginx_version(binary) >= (1, 25, 1):
                listen = f"listen 127.0.0.1:{self.port} ssl;\n    http2 on;"
            else:
                listen = f"listen 127.0.0.1:{self.port} ssl http2;"
            listen += (f"\n    ssl_certificate {cert};\n    ssl_certificate_key {key};"
                       "\n    ssl_protocols TLSv1.2 TLSv1.3;")
        user = "user root;\n" if os.geteuid() == 0 else ""
        temp = "\n".join(f"  {name}_temp_path {work}/{name};"
                         for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        config = work / "nginx.conf"
        config.write_text(
            f"{user}daemon off;\nworker_processes 1;\npid {work}/nginx.pid;\n"
            f"error_log {work}/error.log;\nevents {{ worker_connections 512; }}\n"
            f"http {{\n  log_format protocol '$request_method $request_uri $server_protocol $status';\n"
            f"  access_log {self.access_log} protocol;\n{temp}\n  keepalive_requests 100000;\n"
            f"  server {{\n    {listen}\n    root {root};\n  }}\n}}\n")
        self.process = subprocess.Popen([binary, "-p", str(work), "-c", str(config)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_for_port(self.port, self.process, "nginx")
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"

    def requests(self) -> list[tuple[str, str, str, int]]:
        """(method, path, protocol, status) of every request logged so far,
        e.g. ("GET", "/train-000000.tar", "HTTP/2.0", 206)."""
        if not self.access_log.exists():
            return []
        entries = []
        for line in self.access_log.read_text().splitlines():
            method, path, protocol, status = line.split(" ")
            entries.append((method, path, protocol, int(status)))
        return entries

    def close(self):
        self.process.terminate()
        self.process.wait(timeout=10)


class MotoS3:
    """moto's server on 127.0.0.1, checking SigV4 signatures once asked to.

    Setup (``s3``, a boto3 client) runs with checks off: it creates an IAM
    user with full S3 access, whose key ``access_key`` / ``secret_key`` hold,
    and the test's buckets and objects. ``check_signatures()`` then turns
    moto's checks on (its /moto-api/reset-auth): every later request must be
    signed with that key, or it is refused.
    """

    def __init__(self):
        try:
            import boto3  # noqa: F401  (moto[server] brings boto3)
            import moto.server  # noqa: F401
        except ImportError:
            pytest.skip("moto[server] is not installed (scripts/install-deps.sh installs it)")
        self.port = free_port()
        env = dict(os.environ, AWS_ACCESS_KEY_ID="bootstrap",
                   AWS_SECRET_ACCESS_KEY="bootstrap")
        env.pop("INITIAL_NO_AUTH_ACTION_COUNT", None)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(self.port, self.process, "moto server")
        self.url = f"http://127.0.0.1:{self.port}"
        iam = self._client("iam", "bootstrap", "bootstrap")
        iam.create_user(UserName="shardloader")
        iam.put_user_policy(UserName="shardloader", PolicyName="s3", PolicyDocument=(
            '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", '
            '"Action": "s3:*", "Resource": "*"}]}'))
        key = iam.create_access_key(UserName="shardloader")["AccessKey"]
        self.access_key, self.secret_key = key["AccessKeyId"], key["SecretAccessKey"]
        self.s3 = self._client("s3", self.access_key, self.secret_key)

    def _client(self, service: str, access_key: str, secret_key: str):
        import boto3
        from botocore.config import Config
        # Plain signed payloads (no aws-chunked checksum trailers), which
        # moto verifies.
        config = Config(request_checksum_calculation="when_required",
                        response_checksum_validation="when_required")
        return boto3.client(service, endpoint_url=self.url, region_name="us-east-1",
                            aws_access_key_id=access_key, aws_secret_access_key=secret_key,
                            config=config)

    def check_signatures(self, enabled: bool = True):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        connection.request("POST", "/moto-api/reset-auth", body="0" if enabled else "inf")
        assert connection.getresponse().status == 200
        connection.close()

    def close(self):
        self.process.terminate()
        self.process.wait(timeout=10)


class FaultProxy:
    """Forwards HTTP requests to ``upstream`` ("http://host:port"), injecting
    the faults queued in ``faults``, one per request, in order:

    ``"drop"``  answer with the upstream's headers and half its body, then
               close the connection;
    ``"500"``, ``"503"``, ``"429"``  answer with that status and no body;
    ``"stall"``  send the headers, then nothing for ``stall_s`` seconds;
    ``"ok"``   forward untouched.
    Requests after the queue is empty are forwarded untouched. Requests whose
    path (without its query) ends with one of ``forbidden`` are answered 403
    and take no fault from the queue. Every request
    first waits ``delay_s`` (per-request latency, as a distant server has).
    ``log`` holds
    (method, path, Range header, fault) for every request; ``body_bytes`` the
    body bytes sent to clients.
    """

    def __init__(self, upstream: str, stall_s: float = 5.0, delay_s: float = 0.0):
        self.upstream = upstream.removeprefix("http://")
        self.faults: collections.deque[str] = collections.deque()
        self.log: list[tuple[str, str, str | None, str]] = []
        self.body_bytes = 0
        self.stall_s = stall_s
        self.delay_s = delay_s
        self.forbidden: tuple[str, ...] = ()
        self._lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _forward(self):
                with proxy._lock:
                    if self.path.split("?")[0].endswith(proxy.forbidden or ("\0",)):
                        fault = "403"
                    else:
                        fault = proxy.faults.popleft() if proxy.faults else "ok"
                    proxy.log.append((self.command, self.path, self.headers.get("Range"), fault))
                length = int(self.headers.get("Content-Length") or 0)
                request_body = self.rfile.read(length) if length else None
                if proxy.delay_s:
                    time.sleep(proxy.delay_s)
                if fault in ("500", "503", "429", "403"):
                    self.send_response(int(fault))
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                connection = http.client.HTTPConnection(proxy.upstream, timeout=60)
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("connection", "keep-alive")}
                connection.request(self.command, self.path, body=request_body, headers=headers)
                response = connection.getresponse()
                body = response.read()
                connection.close()
                self.send_response(response.status)
                for name, value in response.getheaders():
                    if name.lower() not in ("connection", "keep-alive", "transfer-encoding",
                                            "content-length", "server", "date"):
                        self.send_header(name, value)
                length = response.getheader("Content-Length") if self.command == "HEAD" else None
                self.send_header("Content-Length", length or str(len(body)))
                self.end_headers()
                if self.command == "HEAD":
                    return
                if fault == "stall":
                    self.wfile.flush()
                    time.sleep(proxy.stall_s)
                    self.close_connection = True
                    return
                if fault == "drop" and len(body) > 1:
                    body = body[: len(body) // 2]
                    self.close_connection = True
                self.wfile.write(body)
                with proxy._lock:
                    proxy.body_bytes += len(body)

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def requests(self, method: str = "GET") -> list[tuple[str, str, str | None, str]]:
        with self._lock:
            return [entry for entry in self.log if entry[0] == method]

    def close(self):
        self.server.shutdown()
        self.server.server_close()
