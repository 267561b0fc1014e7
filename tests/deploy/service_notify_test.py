#!/usr/bin/env python3
"""`actorserve serve` under systemd's service protocol, without systemd: this test plays the
service manager. It binds the datagram socket systemd would (NOTIFY_SOCKET), asks for a watchdog
(WATCHDOG_USEC, WATCHDOG_PID), starts the server and checks what it is told:

  - READY=1 comes once, after the model has loaded: /health answers 200 when it arrives;
  - WATCHDOG=1 keep-alives come every half period while the server runs;
  - SIGTERM: STOPPING=1, then the process exits 0;
  - server.log_format = "json": every line the server logs is one JSON object with time, level,
    logger and msg; a format it does not know is refused by name, as is watchdog_step_s = 0.

  service_notify_test.py ACTORSERVE_BIN MODEL
"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

WATCHDOG_USEC = 2_000_000  # keep-alives every 1 s, each after a heartbeat answered within 0.5 s


def fail(msg):
    print(f"service-notify-test: FAILED: {msg}", file=sys.stderr)
    sys.exit(1)


def health(url):
    try:
        with urllib.request.urlopen(url + "/health", timeout=2) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return None


def main():
    if len(sys.argv) != 3:
        fail("usage: service_notify_test.py ACTORSERVE_BIN MODEL")
    binary, model = sys.argv[1], os.path.abspath(sys.argv[2])
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    tmp = tempfile.mkdtemp(prefix="actorserve-notify.")
    sock_path = os.path.join(tmp, "notify")
    port_file = os.path.join(tmp, "port")
    config = os.path.join(tmp, "serve.toml")
    with open(config, "w") as f:
        f.write(f'[server]\nport = 0\nport_file = "{port_file}"\nlog_format = "json"\n'
                f'[model]\npath = "{model}"\n[cache]\nenabled = false\n[rag]\nenabled = false\n')

    for flag, key in ((["--log-format", "yaml"], "server.log_format"), ([], "server.watchdog_step_s")):
        bad = config + ".bad"
        with open(bad, "w") as f:
            f.write(f'[server]\nwatchdog_step_s = {0 if not flag else 120}\n[model]\npath = "{model}"\n')
        r = subprocess.run([binary, "serve", "--config", bad] + flag, cwd=root, capture_output=True, text=True, timeout=60)
        if r.returncode != 1 or key not in r.stderr:
            fail(f"a bad {key} gave exit status {r.returncode} and {r.stderr.strip()[:200]!r}")

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(sock_path)
    sock.settimeout(0.2)

    env = dict(os.environ, NOTIFY_SOCKET=sock_path, WATCHDOG_USEC=str(WATCHDOG_USEC))
    log_path = os.path.join(tmp, "server.log")
    log = open(log_path, "w")
    # WATCHDOG_PID must name the server itself: the shell sets it to its own pid, then execs it.
    proc = subprocess.Popen(["/bin/sh", "-c", 'WATCHDOG_PID=$$ exec "$0" serve --config "$1"', binary, config],
                            cwd=root, stdout=log, stderr=log, env=env)
    try:
        messages = []  # (time, text)
        url = None
        deadline = time.monotonic() + 180
        ready_at = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                data = sock.recv(4096).decode()
            except socket.timeout:
                continue
            messages.append((time.monotonic(), data))
            if "READY=1" in data.split("\n"):
                if ready_at is not None:
                    fail("READY=1 sent twice")
                ready_at = time.monotonic()
                with open(port_file) as pf:
                    url = f"http://127.0.0.1:{pf.read().strip()}"
                code = health(url)
                if code != 200:
                    fail(f"READY=1 arrived while /health answered {code}")
                break
        if ready_at is None:
            fail(f"no READY=1 within 180 s (exit status {proc.poll()}; messages {[m for _, m in messages]})")
        if not any(m.startswith("STATUS=loading") for _, m in messages):
            fail(f"no STATUS= line while loading: {[m for _, m in messages]}")

        # keep-alives for 4 s: every 1 s, so at least 3, none more than the 2 s period apart
        # (systemd would restart the service then)
        watchdogs = []
        end = time.monotonic() + 4.0
        while time.monotonic() < end:
            try:
                data = sock.recv(4096).decode()
            except socket.timeout:
                continue
            if data == "WATCHDOG=1":
                watchdogs.append(time.monotonic())
        if len(watchdogs) < 3:
            fail(f"{len(watchdogs)} WATCHDOG=1 in 4 s with WATCHDOG_USEC={WATCHDOG_USEC} (want >= 3)")
        gaps = [b - a for a, b in zip(watchdogs, watchdogs[1:])]
        if max(gaps) > WATCHDOG_USEC / 1e6:
            fail(f"a gap of {max(gaps):.2f} s between keep-alives, past the {WATCHDOG_USEC / 1e6:.0f} s period")

        proc.send_signal(signal.SIGTERM)
        stopping = False
        end = time.monotonic() + 60
        while time.monotonic() < end and not stopping:
            try:
                data = sock.recv(4096).decode()
            except socket.timeout:
                continue
            stopping = "STOPPING=1" in data.split("\n")
        if not stopping:
            fail("no STOPPING=1 after SIGTERM")
        rc = proc.wait(timeout=60)
        if rc != 0:
            fail(f"exit status {rc} after SIGTERM")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()

    lines = [l for l in open(log_path).read().splitlines() if l.strip()]
    if not lines:
        fail("the server logged nothing")
    for line in lines:
        try:
            obj = json.loads(line)
        except ValueError:
            fail(f"log line is not JSON: {line[:200]}")
        if set(obj) != {"time", "level", "logger", "msg"}:
            fail(f"log line has keys {sorted(obj)}: {line[:200]}")
    if not any("systemd watchdog" in json.loads(l)["msg"] for l in lines):
        fail("the log does not say the watchdog is on")
    print(f"service-notify-test: READY after load, {len(watchdogs)} keep-alives in 4 s (largest gap "
          f"{max(gaps):.2f} s), STOPPING then exit 0, {len(lines)} JSON log lines")


if __name__ == "__main__":
    main()
