"""Results the board wrote itself: the cache, and the records a Slurm array task leaves for the merge.

Every record is signed with an HMAC key that lives in the board's private folder (mode 0700, never
visible inside a sandbox). A record whose signature does not verify was not written by this board:
the cache re-grades it, the merge refuses it. Records are keyed by what determines a result: the
lesson, the file's content, the grader, the reference, the GPU model and the sandbox mode.
"""
import hashlib
import hmac
import json
import os
import secrets


def file_hash(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class ResultStore:
    def __init__(self, folder):
        self.folder = folder
        self.cache = os.path.join(folder, "cache")
        os.makedirs(self.cache, exist_ok=True)
        os.chmod(folder, 0o700)
        self._key = self._load_key()
        self.refused = []  # (path, why) of records that did not verify

    def _load_key(self):
        path = os.path.join(self.folder, "board.key")
        try:
            with open(path, "rb") as f:
                key = f.read()
            if len(key) == 32:
                return key
        except OSError:
            pass
        key = secrets.token_bytes(32)
        fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key)
        os.replace(path + ".tmp", path)
        return key

    def _mac(self, record):
        body = json.dumps(record, sort_keys=True, separators=(",", ":")).encode()
        return hmac.new(self._key, body, hashlib.sha256).hexdigest()

    def key_for(self, *parts):
        return hashlib.sha256("|".join(str(p) for p in parts).encode()).hexdigest()[:32]

    def write(self, path, record):
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"record": record, "signature": self._mac(record)}, f, indent=2)
        os.replace(tmp, path)

    def read(self, path):
        """The record in `path` if this board signed it; None (and a note in `refused`) otherwise."""
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            record, signature = data["record"], data["signature"]
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as e:
            self.refused.append((path, f"unreadable ({type(e).__name__})"))
            return None
        if not isinstance(record, dict) or not hmac.compare_digest(str(signature), self._mac(record)):
            self.refused.append((path, "its signature does not match: it was not written by this board"))
            return None
        return record

    def cached(self, key):
        return self.read(os.path.join(self.cache, key + ".json"))

    def remember(self, key, record):
        self.write(os.path.join(self.cache, key + ".json"), record)
