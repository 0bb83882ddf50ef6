"""Which files a check command names: real-world check commands, and generated ones around real paths.

Refusing a good check is worse than letting a bad one through, so most rows here are commands whose
look-alike tokens (node ids, globs, options, URLs, module names, patterns, outputs) must not count.
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from canon.check_paths import KnownPaths, as_path, named_paths

REAL_WORLD = [
    ("pytest", []),
    ("python -m pytest -q", []),
    ("python -m pytest -q tests/test_billing.py", ["tests/test_billing.py"]),
    ("pytest tests/test_api.py::TestUsers::test_create[admin-1]", ["tests/test_api.py"]),
    ("pytest 'tests/test_api.py::test_x[a b/c]'", ["tests/test_api.py"]),
    ("python -m pytest tests/ -k 'slug and not unicode' -p no:cacheprovider", ["tests/"]),
    ("pytest --junitxml reports/junit.xml tests/unit", ["tests/unit"]),
    ("pytest --junitxml=reports/junit.xml --basetemp tmp/pt tests/unit", ["tests/unit"]),
    ("python -m pytest --cov src/textkit --cov-report term-missing tests", []),
    ("pytest -o log_cli=true tests/test_log.py", ["tests/test_log.py"]),
    ("pytest --deselect tests/test_a.py::test_slow --ignore tests/legacy tests/", ["tests/"]),
    ("python -W error::DeprecationWarning -m pytest tests/test_x.py", ["tests/test_x.py"]),
    ("python3.11 -m unittest discover -s tests -p 'test_*.py'", []),
    ("python -m unittest tests.test_slug", []),
    ("python scripts/check_docs.py", ["scripts/check_docs.py"]),
    ("python manage.py test", ["manage.py"]),
    ("python setup.py check", ["setup.py"]),
    ('python -c "import textkit; assert textkit.__version__"', []),
    ("python -c \"open('data/x.txt').read()\"", []),
    ("python -m textkit slug 'Hello World'", []),
    ("python -m json.tool package.json > /dev/null", ["package.json"]),
    ("python -m pip install -r requirements-dev.txt", ["requirements-dev.txt"]),
    ("python -m mypy --strict src/textkit", ["src/textkit"]),
    ("mypy textkit/ && pytest -q", ["textkit/"]),
    ("ruff check src tests/*.py", []),
    ("black --check .", []),
    ("shellcheck scripts/*.sh", []),
    ("yamllint .github/workflows/ci.yml", [".github/workflows/ci.yml"]),
    ("./scripts/lint.sh", ["scripts/lint.sh"]),
    ("bash scripts/smoke.sh --fast", ["scripts/smoke.sh"]),
    ("sh -c 'cd sub && make test'", []),
    ("timeout 60 python scripts/e2e.py", ["scripts/e2e.py"]),
    ("PYTHONPATH=src python -m pytest tests/unit", ["tests/unit"]),
    ("env LC_ALL=C sort -c data/words.txt", ["data/words.txt"]),
    ("test -f src/billing/__init__.py", []),
    ("[ -s dist/app.whl ]", []),
    ("test ! -e planted.py && chmod u+w . && echo x > planted.py && test -d $TMPDIR", []),
    ("if [ -f Makefile ]; then make; fi", []),
    ("for f in tests/*.py; do python $f; done", []),
    ("grep -q 'def slugify' textkit/slug.py", ["textkit/slug.py"]),
    ("grep -qx indent=spaces style.txt", ["style.txt"]),
    ("grep -rq TODO/FIXME src/", ["src/"]),
    ("grep -e 'a/b' -e c/d src/x.py", ["src/x.py"]),
    ("! grep -rn 'print(' textkit/", ["textkit/"]),
    ("sed -n 's/a/b/p' setup.cfg", ["setup.cfg"]),
    ("awk '{print $1}' data.csv", ["data.csv"]),
    ("jq -e .version package.json", ["package.json"]),
    ("python gen.py > build/out.txt && diff build/out.txt expected.txt", ["gen.py", "expected.txt"]),
    ("python x.py 2>&1 | tee out/log.txt | grep -q OK", ["x.py"]),
    ("echo done > logs/check.log", []),
    ("mkdir -p out/html && touch out/html/index.html && ls out/html/index.html", []),
    ("wc -l < data/in.csv", ["data/in.csv"]),
    ("ls docs/index.md README.md", ["docs/index.md", "README.md"]),
    ("cat ~/notes.txt $HOME/x.py /etc/os-release ../sibling/file.py", []),
    ("python -m build && twine check dist/*", []),
    ("coverage run -m pytest && coverage report --fail-under=90", []),
    ("make test", []),
    ("make -C docs html", []),
    ("cd frontend && npm test -- src/app.test.js", []),
    ("cargo test --manifest-path crates/core/Cargo.toml", ["crates/core/Cargo.toml"]),
    ("cargo build && ./target/debug/app --help", []),
    ("go test ./...", []),
    ("go test ./internal/parser", ["internal/parser"]),
    ("go vet ./cmd/... ./internal/...", []),
    ("go build -o bin/app ./cmd/app", ["cmd/app"]),
    ("npm test", []),
    ("npx jest src/utils.test.ts", ["src/utils.test.ts"]),
    ("node --test test/", ["test/"]),
    ("curl -fsS http://localhost:8000/health", []),
    ("wget -q -O page.html https://example.com/a/b.html", []),
    ("git diff --exit-code -- src/", []),
    ("git log -1 origin/main", []),
    ("docker build -t org/app:latest .", []),
    ("tox -e py311", []),
    ("pre-commit run --all-files", []),
    ("pytest tests/test_a.py  # see docs/notes.md", ["tests/test_a.py"]),
    ("python 'unbalanced", []),
    ("", []),
]


@pytest.mark.parametrize(("command", "paths"), REAL_WORLD)
def test_real_world_check_commands(command: str, paths: list[str]) -> None:
    assert named_paths(command) == paths


def test_a_tree_knows_its_files_and_folders() -> None:
    tree = KnownPaths(["tests/unit/test_a.py", "setup.py"])
    assert all(tree.exists(p) for p in ("tests/unit/test_a.py", "tests/unit", "tests/", "tests", "setup.py"))
    assert not any(tree.exists(p) for p in ("tests/unit/test_b.py", "test", "tests/un", "src/"))
    assert tree.missing("python -m pytest tests/unit/test_a.py::test_x tests/unit/test_b.py setup.py") == [
        "tests/unit/test_b.py"]
    with_submodule = KnownPaths(["vendor/lib", "README.md"])  # a gitlink is listed as one entry
    assert with_submodule.exists("vendor/lib/tool.py") and not with_submodule.exists("vendor/other.py")


segment = st.builds(str.__add__, st.sampled_from("abcdefghijklmnopqrstuvwxyz"),
                    st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_", max_size=7))
suffix = st.sampled_from(["py", "txt", "json", "toml", "sh", "cfg"])
relative_file = st.builds(lambda folders, name, ext: "/".join([*folders, f"{name}.{ext}"]),
                          st.lists(segment, min_size=0, max_size=3), segment, suffix)
node_id = st.builds(lambda file, test, param: f"{file}::{test}{param}", relative_file, segment,
                    st.sampled_from(["", "[1]", "[a-b]", "[x/y]"]))
# Tokens a check may carry that are never files it needs: each is shell text, whole.
never_a_path = st.sampled_from([
    "-q", "-x", "-v", "-rA", "--tb=short", "--no-header", "--strict-markers", "--durations=5",
    "-p no:cacheprovider", "-k 'a and not b'", "-m 'not slow'", "-W error::DeprecationWarning",
    "--junitxml=out/report.xml", "--junitxml out/report.xml", "--cov src/pkg", "-o out/log.txt", "--basetemp tmp/x",
    "--import-mode=importlib", "'tests/*.py'", "tests/test_[ab].py", "src/**/*.py", "https://example.com/a/b.py",
    "git@github.com:org/repo.git", "$BANACH_CANON/tests/test_x.py", "~/x.py", "/abs/x.py", "../up/x.py",
    "textkit.slug", "json.tool", "3.11", "'{a,b}/c.py'", "./...", ".", "-",
])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(relative_file.map(lambda p: (p, p)), node_id.map(lambda n: (n, n.split("::")[0])),
                          never_a_path.map(lambda t: (t, None))), max_size=8))
def test_generated_commands_name_exactly_their_files(parts: list[tuple[str, str | None]]) -> None:
    command = "python -m pytest " + " ".join(shell for shell, _ in parts)
    expected: list[str] = []
    for _, path in parts:
        if path is not None and path not in expected:
            expected.append(path)
    assert named_paths(command) == expected
    assert KnownPaths(expected).missing(command) == []


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_any_text_gives_relative_paths_inside_the_code_or_none(command: str) -> None:
    for path in named_paths(command):
        assert not path.startswith(("/", "~", "$", "-")) and ".." not in path.split("/")
        assert not any(ch in path for ch in " \t\n'\"*?[]{}:=,$")
        assert as_path(path) == path.removeprefix("./") or path.endswith("/")


def test_scopes_that_may_overlap_are_told_apart_from_those_that_cannot() -> None:
    """What keeps two parallel workers off each other's files: conservative for globs, exact for files."""
    from canon.scope import may_overlap

    assert may_overlap(("a.py",), ("a.py",)) and not may_overlap(("a.py",), ("b.py",))
    assert may_overlap(("src/**",), ("src/x/y.py",)) and not may_overlap(("src/**",), ("lib/x.py",))
    assert may_overlap(("src/**",), ("src/x/*.py",)) and not may_overlap(("src/a/**",), ("src/b/**",))
    assert may_overlap(("**/*.py",), ("src/b/**",))  # a glob from the root may reach anywhere
    assert may_overlap(("src/",), ("src/a.py",)) and may_overlap(("src/",), ("src/*.py",))
    assert not may_overlap(("lib/",), ("src/*.py",))
