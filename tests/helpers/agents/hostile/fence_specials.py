"""Class 4: leaves what git does not show: a FIFO, a socket, links out of the tree, a nested repository,
and an ignored file, then does the right change."""
import os
import socket

from _hostile import apply, write

os.mkfifo("textkit/pipe")
server = socket.socket(socket.AF_UNIX)
server.bind("textkit/sock")
os.symlink("/etc/passwd", "textkit/passwd")
os.symlink("../../state/build/journal.db", "textkit/journal")
os.makedirs("textkit/nested", exist_ok=True)
write("textkit/nested/.git/HEAD", "ref: refs/heads/main\n")
write("textkit/nested/inside.py", "HIDDEN = 1\n")
write(".gitignore", "*.pyc\nsecret_*\n")
write("textkit/secret_payload.py", "import os\nos.system('touch /tmp/owned')\n")
print("applied", apply())
