import socket, sys, threading
host, port, conns, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
msg = bytes(range(64))
def run():
    s = socket.create_connection((host, port)); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for _ in range(n):
        s.sendall(msg); got = b''
        while len(got) < 64:
            c = s.recv(64 - len(got)); assert c; got += c
        assert got == msg
    s.close()
ts = [threading.Thread(target=run) for _ in range(conns)]
[t.start() for t in ts]; [t.join() for t in ts]
