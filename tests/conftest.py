import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "vm-images"))

import socket
import threading

import pytest


@pytest.fixture
def host_service():
    """A one-shot TCP service on the host's loopback (the guest reaches it as
    10.0.2.2 through slirp): start(payload) returns its port; it answers the
    first connection with payload and is closed when the test ends."""
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)

    def start(payload):
        def serve():
            try:
                c, _ = srv.accept()
                c.recv(4096)
                c.sendall(payload)
                c.close()
            except OSError:
                pass
        threading.Thread(target=serve, daemon=True).start()
        return srv.getsockname()[1]
    yield start
    srv.close()
