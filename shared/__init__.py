"""What the three loops share: config, errors, the subprocess runner, git, journal, isolation, supervision."""
