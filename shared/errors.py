"""One error root. Every message is written for a person: what happened, where, what to do next."""
from __future__ import annotations


class BanachError(Exception):
    """Base of every error the core raises on purpose; the CLI boundary prints it as `Error: ...`."""


class ConfigError(BanachError):
    """banach.toml is missing, unreadable or invalid."""


class WorkspaceError(BanachError):
    """The workspace directory is not a Banach workspace, or one of its stores is broken."""


class CanonError(BanachError):
    """A canon document or draft does not parse, validate or reconcile."""


class GitError(BanachError):
    """A git operation on canon or code failed."""


class JournalError(BanachError):
    """A journal cannot be opened or written, or its chain does not hold."""


class AgentError(BanachError):
    """An agent preset is unknown or misconfigured."""


class IsolationError(BanachError):
    """The requested isolation backend cannot be enforced on this machine."""


class SupervisorError(BanachError):
    """supervisord could not be started, reached or stopped."""


class LockBusy(BanachError):
    """Another process holds a lock this step needs."""


class ExportError(BanachError):
    """A commit could not be copied into a fresh tree: a limit passed, objects missing, the repository corrupt."""
