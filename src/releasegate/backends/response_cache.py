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
Each entry also names the session that produced it (`session`), and the `sessions` table keeps every session's
attempt tally: every request it sent for a quality case, answered or failed (its row is written with each batch
it records, in the same transaction as the batch's answers), and the sessions it stood on: the earlier sessions
of its run, the sessions its own cached answers came from, and every session that failed a request it then sent
again (`failures` keeps, per key, the sessions whose request for it failed). A run that serves an answer from a
session counts that session's whole tally once (`ledger`, `record.ledger`): reruns that take the answers a
failing server gave and send only the rest again never lose the failures on the rest.
`ttl_s`: an entry older than this is a miss (and is overwritten by the fresh response); no TTL: never expires.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

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
    attempts TEXT,
    session TEXT
);
CREATE TABLE IF NOT EXISTS failures (
    key TEXT NOT NULL,
    session TEXT NOT NULL,
    PRIMARY KEY (key, session)
);
CREATE TABLE IF NOT EXISTS sessions (
    session TEXT PRIMARY KEY,
    attempts INTEGER NOT NULL,
    errors TEXT NOT NULL,
    sources TEXT NOT NULL
)
"""
_ADDED = {"attempts": "ALTER TABLE responses ADD COLUMN attempts TEXT",
          "session": "ALTER TABLE responses ADD COLUMN session TEXT"}
"""A cache file from before these columns: they are added; its entries know no attempts and no session (NULL)."""
_KEY_VERSION = 2  # 2: output token counts include the end-of-sequence token the model stopped on
_BUSY_TIMEOUT_S = 60.0


def cache_key(fingerprint: str, request: Request, generation: dict[str, Any]) -> str:
    """The cache key of one request to one target with these generation parameters."""
    sent = {"messages": request.messages} if request.messages is not None else {"prompt": request.prompt}
    payload = {"v": _KEY_VERSION, "target": fingerprint, "request": sent, "generation": generation}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class ResponseCache:
    """One cache file, opened for one run (one process, one thread)."""

    def __init__(self, path: Path, *, fingerprint: str, generation: dict[str, Any], ttl_s: float | None = None,
                 session: str | None = None, stood_on: tuple[str, ...] = ()) -> None:
        self.path = Path(path)
        self.session = session
        """This session's name in the cache (None: its answers name no session, as before sessions)."""
        self.tally: dict[str, Any] = {"attempts": 0, "errors": {}}
        """The attempts this session recorded for fresh requests, failed ones by kind."""
        self.sources: set[str] = set(stood_on)
        """The sessions this one stands on: its run's earlier sessions, those its cached answers came from, and
        those that failed a request this one sends again."""
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
                db.executescript(_SCHEMA)
                have = {row[1] for row in db.execute("PRAGMA table_info(responses)")}
                for column, alter in _ADDED.items():
                    if column not in have:
                        db.execute(alter)
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
        query = "SELECT text, tokens, attempts, session FROM responses WHERE key = ?"
        key = self.key(request)
        params: tuple[str | float, ...] = (key,)
        if self.ttl_s is not None:
            query += " AND created_at >= ?"
            params += (time.time() - self.ttl_s,)
        try:
            row = self._db.execute(query, params).fetchone()
        except sqlite3.Error as exc:  # a cache that cannot be read is a miss, never a failed run
            self.error = f"could not read responses: {exc}"
            return None
        if row is None:
            self._stand_on_failures(key)
            return None
        self.hits += 1
        source = row[3] if isinstance(row[3], str) and row[3] else None
        if source is not None:
            self.sources.add(source)
        return Generation(row[0], tokens=Tokens.model_validate_json(row[1]), timing=Timing(),
                          produced_by=_attempts(row[2]), produced_in=source)

    def _stand_on_failures(self, key: str) -> None:
        """A miss is sent again: this session stands on every session whose request for it failed, so rerunning
        what failed never sheds the failures (a run that answered what another failed counts the other too)."""
        try:
            rows = self._db.execute("SELECT session FROM failures WHERE key = ?", (key,)).fetchall()
        except sqlite3.Error as exc:
            self.error = f"could not read failures: {exc}"
            return
        self.sources.update(row[0] for row in rows if isinstance(row[0], str))

    def put_many(self, pairs: list[tuple[Request, Generation]], outcomes: Sequence[str | None] = (),
                 failed: Sequence[Request] = ()) -> None:
        """Store the successful responses among `pairs` (errors are never cached), this session's tally with
        `outcomes` added (the attempts of the batch just recorded, answered or failed), and the requests of the
        batch whose case failed (`failed`), in one transaction."""
        for kind in outcomes:
            self.tally["attempts"] += 1
            if kind is not None:
                self.tally["errors"][kind] = self.tally["errors"].get(kind, 0) + 1
        rows = [
            (self.key(req), self.fingerprint, time.time(), redact(valid_text(gen.text)), gen.tokens.model_dump_json(),
             json.dumps(_sent(gen)), self.session)
            for req, gen in pairs if gen.error is None and gen.text is not None
        ]
        failed_keys = [(self.key(req), self.session) for req in failed] if self.session is not None else []
        if not rows and (self.session is None or not outcomes):
            return
        try:
            with self._db:  # one transaction: commits, or rolls back on error
                self._db.execute("BEGIN IMMEDIATE")
                if self.session is not None:  # the tally first: no answer of the session is stored without it
                    self._db.execute("INSERT OR REPLACE INTO sessions VALUES (?, ?, ?, ?)", (
                        self.session, self.tally["attempts"], json.dumps(self.tally["errors"], sort_keys=True),
                        json.dumps(sorted(self.sources - {self.session}))))
                self._db.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
                self._db.executemany("INSERT OR IGNORE INTO failures VALUES (?, ?)", failed_keys)
        except sqlite3.Error as exc:  # a full disk or a long-held lock must not stop the run: it only costs hits
            self.error = f"could not store responses: {exc}"
            return
        self.stored += len(rows)

    def ledger(self, leave_out: Collection[str] = frozenset()) -> dict[str, dict[str, Any]]:
        """Session -> its tally ({'attempts', 'errors'}) for every session this one stands on, directly or through
        the sessions it stood on, each once; `leave_out` (the run's own sessions, whose attempts its records hold)
        is neither listed nor followed. A session with no row (a cache from before sessions) is left out: its
        answers keep the attempts they carry (`CaseRecord.produced_by`)."""
        found: dict[str, dict[str, Any]] = {}
        todo = sorted(self.sources - set(leave_out))
        seen = set(todo) | set(leave_out)
        while todo:
            name = todo.pop()
            try:
                row = self._db.execute("SELECT attempts, errors, sources FROM sessions WHERE session = ?",
                                       (name,)).fetchone()
            except sqlite3.Error as exc:
                self.error = f"could not read sessions: {exc}"
                return found
            tally = _tally(row)
            if tally is None:
                continue
            found[name] = tally[0]
            for more in tally[1]:
                if more not in seen:
                    seen.add(more)
                    todo.append(more)
        return found

    def __len__(self) -> int:
        count: int = self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        return count

    def close(self) -> None:
        self._db.close()


def _sent(gen: Generation) -> list[str | None]:
    """The attempts that produced a response: its failed in-run retries (their kinds), then the answer (None)."""
    retries = max(0, (gen.timing.attempts or 1) - 1)
    kinds: list[str | None] = list(gen.timing.retried_errors[:retries])
    kinds += [ErrorKind.RETRIED] * (retries - len(kinds))
    return [*kinds, None]


def _tally(row: tuple[Any, ...] | None) -> tuple[dict[str, Any], list[str]] | None:
    """A sessions row as (tally, sources), or None when missing or malformed."""
    if row is None or not isinstance(row[0], int) or row[0] < 0:
        return None
    try:
        errors, sources = json_loads(row[1]), json_loads(row[2])
    except (ValueError, TypeError):
        return None
    if not isinstance(errors, dict) or not all(isinstance(n, int) and n >= 0 for n in errors.values()) \
            or not isinstance(sources, list) or not all(isinstance(x, str) for x in sources):
        return None
    return {"attempts": max(row[0], sum(errors.values())), "errors": errors}, sources


def _attempts(raw: object) -> list[str | None] | None:
    """The stored attempts, or None when unknown or malformed (a damaged row is an entry that knows none)."""
    try:
        value = json_loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return None
    if not isinstance(value, list) or not value or not all(v is None or isinstance(v, str) for v in value):
        return None
    return value
