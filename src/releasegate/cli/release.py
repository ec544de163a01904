"""`releasegate bless`, `attest`, `verify-attestation` and `promote`: what comes after a PASS."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..text import inert
from ._common import JsonOption, consoles, print_json

RunArgument = Annotated[Path, typer.Argument(help="A run directory, e.g. reports/<run-id>.")]


def bless(
    run_dir: RunArgument,
    name: Annotated[str, typer.Option("--as", help="The baseline's name (letters, digits, '_', '.', '-').")],
    reason: Annotated[str, typer.Option(help="Why this run is the baseline (kept with the blessing).")],
    by: Annotated[Optional[str], typer.Option(help="Who blesses it (default: $USER).")] = None,
    key: Annotated[Optional[Path], typer.Option(
        help="Sign the blessing with this Ed25519 private key (PEM): a rubric's baseline.signed_by counts only "
             "blessings its keys signed.", dir_okay=False)] = None,
    as_json: JsonOption = False,
) -> int:
    """Name a run as a baseline that rubrics (`baseline: {blessed: NAME}`) and compare can use. Only a run sealed
    whole, verified unchanged since (releasegate verify) and whose verdict is PASS; who, when and why are kept in
    the reports folder's baselines.jsonl, and a name blessed again keeps its earlier blessings there. With --key
    the line is signed, so a rubric naming the public key (baseline.signed_by) trusts no line anyone else
    appended. Exit 1: the run may not be blessed (the line says why); 2: not a run directory, a bad name, reason
    or key."""
    from ..pipeline.bless import bless_run

    blessing, before = bless_run(run_dir, name, reason, by, key)
    if as_json:
        print_json({"blessing": asdict(blessing), "replaces": asdict(before) if before else None})
    console = consoles(as_json)
    signed = ", signed" if blessing.signature is not None else ""
    console.print(f"blessed {blessing.run} as {blessing.name} (by {blessing.by}, {blessing.blessed_at}{signed})",
                  markup=False, soft_wrap=True)
    if before is not None:
        console.print(f"{blessing.name} meant {before.run} (blessed {before.blessed_at}): kept in baselines.jsonl",
                      markup=False, soft_wrap=True)
    return 0


def attest(
    run_dir: Annotated[Optional[Path], typer.Argument(help="A run directory, e.g. reports/<run-id>.")] = None,
    key: Annotated[Optional[Path], typer.Option(help="The Ed25519 private key (PEM) to sign with.", dir_okay=False)] = None,
    generate_key: Annotated[Optional[Path], typer.Option(
        "--generate-key", help="Make a new Ed25519 key: FILE (private, mode 0600) and FILE.pub, then stop.",
        dir_okay=False)] = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Where the attestation goes (default: "
                                                                          "<run-id>.intoto.json here).", dir_okay=False)] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace the --output file if it exists.")] = False,
    as_json: JsonOption = False,
) -> int:
    """Sign what passed: an in-toto Statement v1 in a DSSE envelope signed with Ed25519, whose subjects are the
    sha256 of every file that ships (model or merged model, adapter, GGUF, tokenizer, chat template: the run's
    manifest) and of each model directory as OpenSSF model-signing digests it, and whose predicate holds the
    verdict, the rubric's hash, each criterion's value and bound, the review's provenance and the run's seal; and
    beside it (<run-id>.test-result.intoto.json) the same subjects under in-toto's test-result predicate, so a
    generic verifier reads pass or fail. Only a run sealed whole, verified unchanged and PASS. Exit 1: the run may
    not be attested (the line says why); 2: a bad key, path or run directory."""
    from ..border.dsse import generate_key as make_key
    from ..pipeline.attest import attest_run
    from ..pipeline.attest_test_result import sibling
    from ..record.signed_statement import Statement

    console = consoles(as_json)
    if generate_key is not None:
        public = make_key(generate_key)
        console.print(f"private key: {generate_key} (keep it secret)\npublic key: {public}", markup=False)
        return 0
    if run_dir is None or key is None:
        raise typer.BadParameter("give RUN_DIR and --key KEY (or --generate-key FILE)")
    path, statement = attest_run(run_dir, key, output, force=force)
    if as_json:
        print_json({"attestation": str(path), "test_result": str(sibling(path)), "statement": statement})
    shown = Statement.model_validate(statement)
    console.print(f"attested {shown.predicate.run.run_id}: {shown.predicate.verdict}, "
                  f"{len(shown.subject)} subject(s) -> {path} (and its test result, {sibling(path).name})",
                  markup=False, soft_wrap=True)
    return 0


def verify_attestation(
    file: Annotated[Path, typer.Argument(help="The attestation (a DSSE envelope) that attest wrote.", dir_okay=False)],
    key: Annotated[list[Path], typer.Option(
        "--public-key", "--key", help="An Ed25519 public key (PEM) it may be signed with (repeatable while a key "
                                      "is rotated: any one that verifies counts).", dir_okay=False)],
    artifact: Annotated[list[Path], typer.Option(help="A file the deploy ships, or a model directory (repeatable): "
                                                      "it must be one of the attested subjects, byte for byte.")],
    rubric_sha256: Annotated[Optional[list[str]], typer.Option(
        "--rubric-sha256", help="Require this effective rubric sha256 (repeatable: any of them), as releasegate "
                                "validate prints it for the official config, and no override of a judging key.")] = None,
    test_result: Annotated[Optional[Path], typer.Option(
        help="The in-toto test-result attestation attest wrote (default: the .test-result.intoto.json beside "
             "FILE, when it exists); it must agree with FILE.", dir_okay=False)] = None,
    as_json: JsonOption = False,
) -> int:
    """The check a deploy step runs: a signature by one of the --public-key keys, the statement, a PASS verdict, the
    test-result attestation beside it agreeing, every --artifact one of its subjects (a file by its sha256, a model
    directory by the digest OpenSSF model-signing gives it), every weights file the run loaded (base, adapter,
    merged, GGUF, draft) among the artifacts, and with --rubric-sha256 the rubric that judged. Exit 0 when all
    hold (the line names the key that verified); 1 with one line saying which does not; 2 for a key, file or hash
    that cannot be read."""
    from ..pipeline.attest import verify_attestation as check
    from ..record.signed_statement import AttestationCheck, ServedFiles

    result = check(file, list(key), list(artifact), tuple(rubric_sha256 or ()), test_result)
    if as_json:
        print_json(result)
    checked = AttestationCheck.model_validate(result)
    run_id = inert(str(checked.run_id))[:200]  # as the signed statement says it
    agreed = f"; {Path(checked.test_result).name} agrees" if checked.test_result else \
        "; no test-result attestation beside it"
    consoles(as_json).print(f"attestation verified: run {run_id}, {checked.reason} (key {checked.key_id[:16]}…"
                            f"{agreed})", markup=False, soft_wrap=True)
    served = ServedFiles.model_validate(checked.served_files) if isinstance(checked.served_files, dict) else None
    if served is not None and isinstance(served.files, list):  # as the signed statement says
        how = inert(str(served.known_as))[:20]
        consoles(as_json).print(f"served files ({how}): {len(served.files)}", markup=False, soft_wrap=True)
    return 0


def promote(
    run_dir: RunArgument,
    webhook: Annotated[Optional[str], typer.Option(help="POST the signed summary here (needs --key).")] = None,
    key: Annotated[Optional[Path], typer.Option(help="The Ed25519 private key (PEM) that signs the summary.",
                                                dir_okay=False)] = None,
    webhook_token_env: Annotated[Optional[str], typer.Option(
        help="An environment variable whose value goes as the webhook's Bearer token (never printed).")] = None,
    mlflow_model: Annotated[Optional[str], typer.Option(help="Register (or tag) a version of this model in the "
                                                             "MLflow registry.")] = None,
    alias: Annotated[Optional[str], typer.Option(help="The MLflow alias to point at that version.")] = None,
    mlflow_uri: Annotated[Optional[str], typer.Option(help="The MLflow registry URI: http(s)://HOST:PORT, "
                                                           "sqlite:///PATH or file:///PATH (default: MLflow's own "
                                                           "settings, MLFLOW_TRACKING_URI).")] = None,
    as_json: JsonOption = False,
) -> int:
    """Hand a PASS on: POST the signed summary to a webhook (retried on a timeout, a refused connection, 429 or
    5xx; no redirect followed; secrets masked), and/or register or tag the model version in an MLflow registry
    with the verdict, rubric hash, report and every weights file that passed, under an alias (pip install
    'releasegate[mlflow]'); each request, retry and wait is bounded. Only a run
    sealed whole, verified unchanged and PASS. Exit 1: the run may not be promoted; 2: bad options; 4: the
    webhook or registry failed."""
    from ..pipeline.promote import promote_run
    from ..record.promotion import Promotion

    done = promote_run(run_dir, webhook=webhook, key=key, token_env=webhook_token_env, mlflow_model=mlflow_model,
                       alias=alias, mlflow_uri=mlflow_uri)
    if as_json:
        print_json(done)
    console = consoles(as_json)
    promoted = Promotion.model_validate(done)
    if promoted.webhook is not None:
        hook = promoted.webhook
        unread = f"; its reply not read: {hook.reply_not_read}" if hook.reply_not_read else ""
        console.print(f"webhook: {hook.url} answered {hook.status} (attempt {hook.attempts}){unread}",
                      markup=False, soft_wrap=True)
    if promoted.mlflow is not None:
        m = promoted.mlflow
        console.print(f"mlflow: {m.model} version {m.version} is now @{m.alias} in {m.registry}",
                      markup=False, soft_wrap=True)
    return 0
