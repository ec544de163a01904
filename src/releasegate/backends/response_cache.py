"""The response cache: outputs kept across runs, so a rerun (a changed rubric, a resumed run, one more suite)
needs no new generation for requests already answered.

A SQLite file in WAL mode, shared safely by concurrent `check` runs (each write is one short IMMEDIATE
transaction; readers never block writers). A key is the sha256 of

    the target fingerprint   hf: hashes of the model, adapter (and draft) files, merge, dtype, device, quantize;
                             openai: base_url, model, mode, extra_body, headers, credentials masked
                             (and the tokenizer file's hash);
                             replay: the responses file's hash
    the request              messages or prompt, exactly as sent
    the generation params    max_new_tokens, temperature, top_p, stop, seed

Only successful responses are stored, with their token counts and the attempts that produced them (the failed
in-run retries' kinds, then the answer: a record built from the entry carries them, so the failures behind a cached
answer still count in the error rate); never a timing. A record built from the cache
says `cached: true`, has no timing, and no latency, throughput or run-cost figure uses it.
The file holds hashes, response texts (registered secrets redacted, as in records.jsonl) and token counts only:
no request body, header, URL or key.
`ttl_s`: an entry older than this is a miss (and is overwritten by the fresh response); no TTL: never expires.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from pathlib import Path

from ..border.files import check_regular, exists
from ..border.structured import json_loads
from ..errors import ErrorKind, InputError
from ..record.records import Timing, Tokens
from ..redaction import redact
from ..text import valid_text
from . import Generation, Request

__all__ = ["ResponseCache", "cache_key"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    created_at REAL NOT NULL,
    text TEXT NOT NULL,
    tokens TEXT NOT NULL,
    attempts TEXT
)
"""
_ADD_ATTEMPTS = "ALTER TABLE responses ADD COLUMN attempts TEXT"
"""A cache file from before `attempts`: the column is added; its entries know no attempts (NULL)."""
_KEY_VERSION = 2  # 2: output token counts include the end-of-sequence token the model stopped on
_BUSY_TIMEOUT_S = 60.0


def cache_key(fingerprint: str, request: Request, generation: dict) -> str:
    """The cache key of one request to one target with these generation parameters."""
    sent = {"messages": request.messages} if request.messages is not None else {"prompt": request.prompt}
    payload = {"v": _KEY_VERSION, "target": fingerprint, "request": sent, "generation": generation}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class ResponseCache:
    """One cache file, opened for one run (one process, one thread)."""

    def __init__(self, path: Path, *, fingerprint: str, generation: dict, ttl_s: float | None = None) -> None:
        self.path = Path(path)
        self.fingerprint = fingerprint
        self.generation = dict(generation)
        self.ttl_s = ttl_s
        self.hits = 0
        self.stored = 0
        self.error: str | None = None
        """The last read or write failure, if any (failed reads are misses, failed writes are skipped: never fatal)."""
        self._db = self._open()

    def _open(self) -> sqlite3.Connection:
        for _attempt in range(50):  # about 5 s
            db = None
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                if exists(self.path) or os.path.lexists(self.path):  # sqlite opens it itself: a FIFO never
                    check_regular(self.path, what="response cache")
                db = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_S, isolation_level=None)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                db.execute(_SCHEMA)
                if "attempts" not in {row[1] for row in db.execute("PRAGMA table_info(responses)")}:
                    db.execute(_ADD_ATTEMPTS)
                return db
            except (sqlite3.Error, OSError) as exc:
                if db is not None:
                    db.close()
                error = exc
                # two runs creating the file at once: switching to WAL can be refused without waiting
                if not (isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)):
                    break
                time.sleep(0.1)
        raise InputError(f"cannot open the response cache: {error}", file=self.path,
                         hint="fix cache.path, delete a damaged cache file, or run with --no-cache")

    def key(self, request: Request) -> str:
        return cache_key(self.fingerprint, request, self.generation)

    def get(self, request: Request) -> Generation | None:
        """The cached response to `request` (tokens, no timing), or None."""
        query = "SELECT text, tokens, attempts FROM responses WHERE key = ?"
        params: tuple = (self.key(request),)
        if self.ttl_s is not None:
            query += " AND created_at >= ?"
            params += (time.time() - self.ttl_s,)
        try:
            row = self._db.execute(query, params).fetchone()
        except sqlite3.Error as exc:  # a cache that cannot be read is a miss, never a failed run
            self.error = f"could not read responses: {exc}"
            return None
        if row is None:
            return None
        self.hits += 1
        return Generation(row[0], tokens=Tokens.model_validate_json(row[1]), timing=Timing(),
                          produced_by=_attempts(row[2]))

    def put_many(self, pairs: list[tuple[Request, Generation]]) -> None:
        """Store the successful responses among `pairs` in one transaction (errors are never cached)."""
        rows = [
            (self.key(req), self.fingerprint, time.time(), redact(valid_text(gen.text)), gen.tokens.model_dump_json(),
             json.dumps(_sent(gen)))
            for req, gen in pairs if gen.error is None and gen.text is not None
        ]
        if not rows:
            return
        try:
            with self._db:  # one transaction: commits, or rolls back on error
                self._db.execute("BEGIN IMMEDIATE")
                self._db.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?)", rows)
        except sqlite3.Error as exc:  # a full disk or a long-held lock must not stop the run: it only costs hits
            self.error = f"could not store responses: {exc}"
            return
        self.stored += len(rows)

    def __len__(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        self._db.close()


def _sent(gen: Generation) -> list[str | None]:
    """The attempts that produced a response: its failed in-run retries (their kinds), then the answer (None)."""
    retries = max(0, (gen.timing.attempts or 1) - 1)
    kinds: list[str | None] = list(gen.timing.retried_errors[:retries])
    kinds += [ErrorKind.RETRIED] * (retries - len(kinds))
    return [*kinds, None]


def _attempts(raw) -> list[str | None] | None:
    """The stored attempts, or None when unknown or malformed (a damaged row is an entry that knows none)."""
    try:
        value = json_loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return None
    if not isinstance(value, list) or not value or not all(v is None or isinstance(v, str) for v in value):
        return None
    return value
