"""The one error the book's build raises: a problem in a lesson, a mapping or a results file."""


class BookError(Exception):
    """A problem in a lesson, a mapping or a results file; the docs build stops on it."""
