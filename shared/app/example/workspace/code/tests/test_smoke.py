import textkit


def test_package_imports():
    assert textkit.__doc__
