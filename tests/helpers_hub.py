"""A loopback stand-in for the Hugging Face Hub that the real ``huggingface_hub`` client talks to.

Why our own: PyPI's ``hf-local-hub`` 3.0.0 ships only a Python client and CLI; its server is a Go
binary that the wheel does not contain. This one implements just the endpoints the client calls
for ``snapshot_download`` / ``hf_hub_download`` / ``HfApi.repo_info`` (read from huggingface_hub
2.4's ``hf_api.py``, ``file_download.py`` and ``_snapshot_download.py``):

* ``GET /api/{models|datasets}/{repo}/revision/{rev}`` -> ``{"id", "sha", "siblings"}``
* ``GET /api/{models|datasets}/{repo}/tree/{rev}[/{path}]?recursive=...`` -> file entries
* ``HEAD|GET /{repo}/resolve/{rev}/{file}`` and ``/datasets/{repo}/resolve/{rev}/{file}`` with
  ``X-Repo-Commit``, ``ETag`` and ``Content-Length`` (no Xet headers: plain HTTP download)
* unknown repo / revision / file -> 404 with ``X-Error-Code`` (RepoNotFound, RevisionNotFound,
  EntryNotFound), as the hub answers.

and, for ``HfApi.create_repo`` / ``upload_folder`` (huggingface_hub 2.4's ``hf_api.create_repo``
and ``_commit_api``), the calls of a commit whose files all go inline:

* ``POST /api/validate-yaml`` -> the README's metadata parsed as a ``ModelCard`` (400 if not)
* ``POST /api/repos/create`` -> ``{"url"}`` (409 when it exists, which ``exist_ok`` accepts)
* ``POST /api/models/{repo}/preupload/{rev}`` -> every file ``uploadMode: regular`` (no LFS/Xet)
* ``POST /api/models/{repo}/commit/{rev}`` (NDJSON: a header, then base64 files) -> a new commit
  on ``rev`` holding its files with these added, which the read endpoints then serve.

Each ``add`` publishes one commit (a sha1 of its content) that its named revisions (``main``, a
tag, a branch such as Pythia's ``step143000``, a pull request's ``refs/pr/N``) and the sha itself
resolve to; adding the same repo again adds another commit beside the first (Pythia's repos hold
safetensors in ``main`` and pickle weights only in each ``step*`` branch). Binds 127.0.0.1 on a free
port; ``requests`` counts every request, so a test can show that none came after a point.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit


class Repo:
    """A repo's commits (sha -> files) and the refs that name them; ``sha`` / ``files`` are the
    commit added last."""

    def __init__(self) -> None:
        self.commits: dict[str, dict[str, bytes]] = {}
        self.refs: dict[str, str] = {}
        self.sha = ""
        self.files: dict[str, bytes] = {}

    def commit(self, files: dict[str, bytes], revisions: tuple[str, ...]) -> str:
        files = dict(sorted(files.items()))
        digest = hashlib.sha1()
        for name, data in files.items():
            digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
        self.sha, self.files = digest.hexdigest(), files
        self.commits[self.sha] = files
        self.refs.update({rev: self.sha for rev in revisions})
        return self.sha

    def resolve(self, revision: str) -> str | None:
        """The commit a ref or a commit sha names (None: the hub's RevisionNotFound)."""
        return revision if revision in self.commits else self.refs.get(revision)


def folder_files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` by its posix path relative to it."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


class LoopbackHub:
    """``with LoopbackHub() as hub: hub.add("model", "org/name", files, ("main",)); hub.url``"""

    def __init__(self) -> None:
        self.repos: dict[tuple[str, str], Repo] = {}
        self.requests: list[str] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    def add(self, repo_type: str, repo_id: str, files: dict[str, bytes], revisions: tuple[str, ...] = ("main",)) -> str:
        """Publish a commit of a repo (``repo_type`` model or dataset) under ``revisions``;
        returns its sha."""
        return self.repos.setdefault((repo_type, repo_id), Repo()).commit(files, revisions)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> LoopbackHub:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def do_HEAD(self) -> None:
                hub._handle(self, head=True)

            def do_GET(self) -> None:
                hub._handle(self, head=False)

            def do_POST(self) -> None:
                hub._post(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Close the listening socket: from now on a connection to ``url`` is refused."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> LoopbackHub:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ------------------------------------------------------------------ protocol
    def _find(self, repo_type: str, rest: list[str]) -> tuple[str, Repo] | None:
        """(repo id, repo) for the longest known ``org/name`` or ``name`` prefix of ``rest``."""
        for n in (2, 1):
            repo_id = "/".join(rest[:n])
            if (repo_type, repo_id) in self.repos:
                return repo_id, self.repos[(repo_type, repo_id)]
        return None

    def _handle(self, req: BaseHTTPRequestHandler, head: bool) -> None:
        self.requests.append(f"{req.command} {req.path}")
        parts = [unquote(p) for p in urlsplit(req.path).path.strip("/").split("/")]
        if parts[:1] == ["api"] and len(parts) > 2 and parts[1] in ("models", "datasets"):
            self._api(req, parts[1][:-1], parts[2:])
            return
        repo_type = "model"
        if parts[:1] == ["datasets"]:
            repo_type, parts = "dataset", parts[1:]
        found = self._find(repo_type, parts)
        if found is None:
            return self._error(req, 404, "RepoNotFound")
        repo_id, repo = found
        rest = parts[len(repo_id.split("/")):]
        if len(rest) < 3 or rest[0] != "resolve":
            return self._error(req, 404, "EntryNotFound")
        sha, name = repo.resolve(rest[1]), "/".join(rest[2:])
        if sha is None:
            return self._error(req, 404, "RevisionNotFound")
        if name not in repo.commits[sha]:
            return self._error(req, 404, "EntryNotFound")
        data = repo.commits[sha][name]
        req.send_response(200)
        req.send_header("X-Repo-Commit", sha)
        req.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
        req.send_header("Content-Length", str(len(data)))
        req.send_header("Content-Type", "application/octet-stream")
        req.end_headers()
        if not head:
            req.wfile.write(data)

    def _api(self, req: BaseHTTPRequestHandler, repo_type: str, rest: list[str]) -> None:
        for n in (2, 1):
            repo_id = "/".join(rest[:n])
            tail = rest[n:]
            if (repo_type, repo_id) in self.repos and tail[:1] in (["revision"], ["tree"]):
                break
        else:
            return self._error(req, 404, "RepoNotFound")
        repo = self.repos[(repo_type, repo_id)]
        sha = repo.resolve(tail[1]) if len(tail) >= 2 else None
        if sha is None:
            return self._error(req, 404, "RevisionNotFound")
        files = repo.commits[sha]
        if tail[0] == "revision":
            body = {"id": repo_id, "sha": sha, "siblings": [{"rfilename": f} for f in files]}
        else:
            prefix = "/".join(tail[2:])
            body = [{"type": "file", "path": f, "size": len(d), "oid": hashlib.sha1(d).hexdigest()}
                    for f, d in files.items() if not prefix or f.startswith(prefix + "/")]
        self._json(req, 200, body)

    def _post(self, req: BaseHTTPRequestHandler) -> None:
        self.requests.append(f"{req.command} {req.path}")
        body = req.rfile.read(int(req.headers.get("Content-Length") or 0))
        parts = [unquote(p) for p in urlsplit(req.path).path.strip("/").split("/")]
        if parts == ["api", "validate-yaml"]:
            return self._validate_yaml(req, json.loads(body)["content"])
        if parts == ["api", "repos", "create"]:
            spec = json.loads(body)
            repo_id = "/".join(p for p in (spec.get("organization"), spec["name"]) if p)
            key = (spec.get("type") or "model", repo_id)
            if key in self.repos:
                return self._error(req, 409, "RepoAlreadyExists")
            self.add(key[0], repo_id, {}, ("main",))
            return self._json(req, 200, {"url": f"{self.url}/{repo_id}", "name": repo_id})
        if len(parts) >= 5 and parts[:2] == ["api", "models"] and parts[-2] in ("preupload", "commit"):
            repo_id, action, rev = "/".join(parts[2:-2]), parts[-2], parts[-1]
            repo = self.repos.get(("model", repo_id))
            if repo is None:
                return self._error(req, 404, "RepoNotFound")
            if action == "preupload":
                files = json.loads(body)["files"]
                return self._json(req, 200, {"files": [{"path": f["path"], "uploadMode": "regular",
                                                        "shouldIgnore": False} for f in files]})
            base = repo.resolve(rev)
            files = dict(repo.commits[base]) if base else {}
            for line in body.splitlines():
                item = json.loads(line)
                if item["key"] == "file":
                    files[item["value"]["path"]] = base64.b64decode(item["value"]["content"])
                elif item["key"] != "header":
                    return self._error(req, 400, "UnsupportedOperation")
            sha = repo.commit(files, (rev,))
            return self._json(req, 200, {"commitUrl": f"{self.url}/{repo_id}/commit/{sha}", "commitOid": sha})
        return self._error(req, 404, "EntryNotFound")

    def _validate_yaml(self, req: BaseHTTPRequestHandler, content: str) -> None:
        """What the Hub checks before a README.md lands: its metadata parses as a model card
        (``ModelCard`` reads ``model-index`` into eval results and raises on a malformed one)."""
        from huggingface_hub import ModelCard

        try:
            ModelCard(content, ignore_metadata_errors=False)
        except Exception as err:  # the Hub answers 400 with the reason
            return self._json(req, 400, {"errors": [{"message": str(err)}], "warnings": []})
        return self._json(req, 200, {"errors": [], "warnings": []})

    @staticmethod
    def _json(req: BaseHTTPRequestHandler, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        req.send_response(status)
        req.send_header("Content-Type", "application/json")
        req.send_header("Content-Length", str(len(data)))
        req.end_headers()
        if req.command != "HEAD":
            req.wfile.write(data)

    def _error(self, req: BaseHTTPRequestHandler, status: int, code: str) -> None:
        data = json.dumps({"error": code}).encode()
        req.send_response(status)
        req.send_header("X-Error-Code", code)
        req.send_header("Content-Type", "application/json")
        req.send_header("Content-Length", str(len(data)))
        req.end_headers()
        if req.command != "HEAD":
            req.wfile.write(data)
