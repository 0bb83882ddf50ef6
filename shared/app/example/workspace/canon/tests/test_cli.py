import subprocess
import sys


def run(*args):
    return subprocess.run([sys.executable, "-m", "textkit", *args], capture_output=True, text=True, timeout=30)


def test_slug_command():
    result = run("slug", "Hello World")
    assert result.returncode == 0
    assert result.stdout.strip() == "hello-world"


def test_count_command():
    result = run("count", "one two three")
    assert result.returncode == 0
    assert result.stdout.strip() == "3"


def test_bad_usage_exits_2():
    result = run("shout", "x")
    assert result.returncode == 2
    assert "usage" in result.stderr.lower()
