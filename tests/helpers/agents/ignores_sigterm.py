"""Never returns and ignores SIGINT and SIGTERM: only SIGKILL stops it."""
import signal
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGINT, signal.SIG_IGN)
print("READY", flush=True)
while True:
    time.sleep(1)
