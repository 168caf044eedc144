"""Ignores SIGTERM and SIGINT and spins forever while being imported."""
import signal

signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGINT, signal.SIG_IGN)
while True:
    pass
