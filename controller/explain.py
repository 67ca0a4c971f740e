"""`prom-autoscaler-controller explain NAMESPACE/NAME`: the last decision, in words.

Reads the PromAutoscaler's `status.lastDecision` through the API server (or, with `--hpa` or
`--controller-url`, the controller's `/debug/decisions/...` document, which also covers
previewed native HPAs and carries the full trace; over HTTPS with `--token` or the kubeconfig
user's token, which the controller checks with the API server) and prints what a person needs in ten seconds:
the outcome, each metric's value against its target and what it proposed, every step that
changed the number and why the final count is what it is, the forecast's part (`status.prediction`
while spec.prediction is not Off: each metric's forecast, what it asks for, whether it is
trusted), scale to zero's state (`lastDecision.scaleToZero`: idle, the cooldown's countdown, or
what woke it); for a previewed HPA, its own `status.desiredReplicas` next to ours; a sync that
decided no count (metrics or /scale unreadable) says so, and a conflicting autoscaler that kept
a decision from being applied is named. `-o json` prints the document as read.

Exit status: 0 printed; 1 the object or its decision could not be read (the message says why and
what to check: not found, RBAC, not synced, a standby replica, the controller unreachable or its
certificate refused); 2 usage errors (also a --controller-url that is not an http(s) URL).

Non-goals: deciding or recomputing anything; writing anything.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import ssl
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from controller.algorithm import Outcome
from controller.algorithm.conditions import LIMIT_MESSAGES, MSG_SCALE_DOWN_STABILIZED, MSG_SCALE_UP_STABILIZED, Reason
from controller.kubeconfig import client_config
from kubecommon.kube.client import KubeClient
from kubecommon.kube.config import KubeConfigError
from kubecommon.kube.errors import KubeAPIError, KubeError
from kubecommon.tls import client_ssl_context

__all__ = ["main", "no_decision_message", "render", "status_document"]

_API = "/apis/autoscaling.prom-autoscaler.io/v1alpha1"
_WHY: dict[str, str] = {
    **{str(k): v for k, v in LIMIT_MESSAGES.items()},
    str(Reason.SCALE_DOWN_STABILIZED): MSG_SCALE_DOWN_STABILIZED,
    str(Reason.SCALE_UP_STABILIZED): MSG_SCALE_UP_STABILIZED,
    "Paused": "spec.paused is true: the replicas are held, nothing is written",
    str(Reason.SCALING_DISABLED): "the target is at 0 replicas with minReplicas > 0 (scaling disabled)",
    "ConflictingAutoscaler": "another autoscaler targets the same workload: nothing is written",
    str(Reason.SCALED_TO_ZERO): "minReplicas 0: every activation metric is at or below its activation value, "
    "so the target stays at 0 until one rises above it",
}


# outcomes of a sync that decided no count (the replicas it shows are only the current ones)
_UNDECIDED = frozenset({str(Outcome.BLOCKED), str(Outcome.FAILED_GET_SCALE)})


class ExplainError(Exception):
    """The decision could not be read; the message says what to check."""


def _metric_line(m: Mapping[str, Any]) -> str:
    name = str(m.get("name") or m.get("type") or "?")
    if "error" in m:
        return f"  {name}: could not be read: {m['error']}"
    value, target = m.get("value", "<unknown>"), m.get("target", "<unset>")
    ratio = f", ratio {m['ratio']}" if "ratio" in m else ""
    pods = m.get("pods")
    pod_text = f"; pods ready {pods.get('ready')}, unready {pods.get('unready')}, missing {pods.get('missing')}" \
        if isinstance(pods, Mapping) else ""  # fmt: skip
    age = f", sample {m['sampleAgeSeconds']}s old" if "sampleAgeSeconds" in m else ""
    return (f"  {name}: {value} vs target {target}{ratio} -> wants {m.get('proposal', '?')} "
            f"({m.get('why', '')}{pod_text}{age})")  # fmt: skip


def _step_line(s: Mapping[str, Any]) -> str:
    before, after = s.get("before"), s.get("after")
    change = f"{before} -> {after}" if before != after else f"stays {after}"
    note = f"; {s['note']}" if s.get("note") else ""
    return f"  {s.get('stage', '?')}: {change} ({s.get('reason', '')}{note})"


def _prediction_lines(p: Mapping[str, Any]) -> list[str]:
    """`status.prediction` (or the /debug document's copy): mode, reason, why, one line per metric."""
    asks = f"; asks for {p['replicas']} (reactive {p.get('reactiveReplicas', '?')})" if "replicas" in p else ""
    lines = [f"Prediction ({p.get('mode', '?')}, {p.get('reason', '?')}{asks}): {p.get('message', '')}"]
    for m in p.get("metrics") or ():
        if not isinstance(m, Mapping):
            continue
        head = (f"forecast {m['forecast']} -> {m.get('replicas', '?')} replicas" if "forecast" in m
                else "no forecast")  # fmt: skip
        facts = ["trusted" if m.get("trusted", True) else "not trusted: reactive only"]
        if "skill" in m:
            facts.append(f"skill {m['skill']}")
        facts.append(f"{float(m.get('historySeconds') or 0) / 86_400:.1f} days of history")
        why = f"; {m['message']}" if m.get("message") else ""
        lines.append(f"  {m.get('name', '?')}: {head} ({', '.join(facts)}{why})")
    return lines


def _zero_lines(zero: Any) -> list[str]:
    """`lastDecision.scaleToZero`: idle, active or unread, with the cooldown's countdown while it runs."""
    if not isinstance(zero, Mapping):
        return []
    left = f"; {zero['remainingSeconds']}s of the {zero.get('cooldownSeconds', '?')}s cooldown left" \
        if "remainingSeconds" in zero else ""  # fmt: skip
    return [f"Scale to zero ({zero.get('activity', '?')}{left}): {zero.get('why', '')}"]


def _against_hpa(hpa_desired: Any, ours: Any) -> str:
    """The previewed HPA's own `status.desiredReplicas` next to our count, the difference named."""
    head = f"HorizontalPodAutoscaler's own status.desiredReplicas: {hpa_desired}"
    if ours is None:
        return f"{head} (we decided no count to compare)"
    if not isinstance(ours, int) or not isinstance(hpa_desired, int):
        return head
    if ours == hpa_desired:
        return f"{head} (agrees)"
    more = ours > hpa_desired
    return f"{head} (we want {ours}: {abs(ours - hpa_desired)} {'more' if more else 'fewer'})"


def _conflict(doc: Mapping[str, Any]) -> str | None:
    """The message of `ScalingActive=False ConflictingAutoscaler`, if the document has it."""
    for c in doc.get("conditions") or ():
        if isinstance(c, Mapping) and c.get("type") == "ScalingActive" and c.get("status") == "False" \
                and c.get("reason") == "ConflictingAutoscaler":
            return str(c.get("message") or "")
    return None


def render(doc: Mapping[str, Any], *, title: str) -> str:
    """A `lastDecision` (status or /debug document) as a few lines of plain text."""
    last = doc.get("lastDecision") if isinstance(doc.get("lastDecision"), Mapping) else doc
    assert isinstance(last, Mapping)
    current, desired = last.get("currentReplicas", "?"), last.get("desiredReplicas", "?")
    lines = [f"{title}  (decided {last.get('time', 'at an unknown time')})"]
    undecided = last.get("outcome") in _UNDECIDED
    why = f" ({last['rescaleReason']})" if last.get("rescaleReason") else ""
    if undecided:
        lines.append(f"Outcome: {last.get('outcome')}: no replica count decided; the target stays at {current}")
    else:
        lines.append(f"Outcome: {last.get('outcome', '?')}: {current} -> {desired} replicas{why}")
    if "hpaDesiredReplicas" in doc:
        lines.append(_against_hpa(doc["hpaDesiredReplicas"], None if undecided else desired))
    conflict = _conflict(doc)
    if conflict is not None:
        lines.append(f"Not applied: another autoscaler targets the same workload ({conflict}); /scale was left alone")
    elif last.get("applied") is False:
        lines.append("Not applied: a native HPA is only previewed (its built-in controller scales it); /scale "
                     "was left alone" if "hpaDesiredReplicas" in doc
                     else "Not applied: Preview mode or paused; the target's /scale was left alone")
    metrics: Sequence[Mapping[str, Any]] = last.get("metrics") or ()
    if metrics:
        lines.append("Metrics:")
        lines += [_metric_line(m) for m in metrics]
    prediction = doc.get("prediction")
    if isinstance(prediction, Mapping):
        lines += _prediction_lines(prediction)
    lines += _zero_lines(last.get("scaleToZero"))
    steps: Sequence[Mapping[str, Any]] = last.get("steps") or ()
    changed = [s for s in steps if s.get("before") != s.get("after")]
    if changed:
        lines.append("Steps that changed the number:")
        lines += [_step_line(s) for s in changed]
    reason = str(last.get("limitingReason") or "")
    if reason:
        meaning = f": {_WHY[reason]}" if reason in _WHY else ""
        lines.append(f"Why {'no count' if undecided else desired}: {reason}{meaning}")
    if last.get("error"):
        lines.append(f"Error: {last['error']}")
    if last.get("truncated"):
        lines.append(f"Note: {last['truncated']}")
    history = doc.get("history")
    if isinstance(history, Mapping) and history.get("note"):
        lines.append(f"Note: {history['note']}")
    return "\n".join(lines)


async def _from_status(kubeconfig: str | None, namespace: str, name: str) -> Mapping[str, Any]:
    try:
        config = client_config(kubeconfig)
    except KubeConfigError as err:
        raise ExplainError(str(err)) from None
    client = KubeClient(config, user_agent="prom-autoscaler-controller/explain")
    await client.start()
    try:
        obj = await client.get(f"{_API}/namespaces/{namespace}/promautoscalers/{name}")
    except KubeError as err:
        raise ExplainError(_read_problem(err, namespace, name)) from None
    finally:
        await client.close()
    given = obj.get("status")
    status: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    last = status.get("lastDecision")
    if not isinstance(last, Mapping):
        raise ExplainError(no_decision_message(namespace, name, status))
    return status_document(status)


def status_document(status: Mapping[str, Any]) -> dict[str, Any]:
    """What `render` reads from a PromAutoscaler's status: `lastDecision`, the conditions (which
    say, for one, that a conflicting autoscaler kept the decision from being applied) and
    `prediction` when there is one."""
    doc = {"lastDecision": status.get("lastDecision"), "conditions": list(status.get("conditions") or ())}
    if isinstance(status.get("prediction"), Mapping):
        doc["prediction"] = status["prediction"]
    return doc


def _read_problem(err: KubeError, namespace: str, name: str) -> str:
    """Why the PromAutoscaler could not be read, with what to do for not found and 401/403."""
    code = err.code if isinstance(err, KubeAPIError) else None
    text = err.status.message if isinstance(err, KubeAPIError) else str(err)
    if code == 404:
        return (f"PromAutoscaler {namespace}/{name} not found: {text} (kubectl get pas -n {namespace} lists "
                "them; a native HPA previewed by the controller: --hpa --controller-url)")
    if code == 403:
        return (f"cannot read PromAutoscaler {namespace}/{name}: 403 {text} (the kubeconfig's user needs get "
                f"on promautoscalers.autoscaling.prom-autoscaler.io; check with kubectl auth can-i get "
                f"promautoscalers -n {namespace})")
    if code == 401:
        return f"cannot read PromAutoscaler {namespace}/{name}: 401 {text} (the kubeconfig's credentials were refused)"
    return f"cannot read PromAutoscaler {namespace}/{name}: {err}"


def no_decision_message(namespace: str, name: str, status: Mapping[str, Any]) -> str:
    """A PromAutoscaler without `status.lastDecision`: never synced, or never decided and why."""
    for c in status.get("conditions") or ():
        if isinstance(c, Mapping) and c.get("type") == "ScalingActive" and c.get("status") == "False":
            return (f"PromAutoscaler {namespace}/{name} has no status.lastDecision: nothing was decided: "
                    f"ScalingActive=False {c.get('reason')}: {c.get('message')}")
    return (f"PromAutoscaler {namespace}/{name} has no status.lastDecision yet: no controller has synced it "
            "(is the controller running, leading, and watching this namespace? a new object is synced "
            "within seconds)")


@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerAccess:
    """How to reach the controller's endpoint: its URL, and for HTTPS the bearer token (given, or
    the kubeconfig user's) and how to verify its certificate."""

    url: str
    token: str | None = None
    kubeconfig: str | None = None
    ca_file: str | None = None
    insecure: bool = False


async def _token(access: ControllerAccess) -> str | None:
    """`--token`, else the kubeconfig user's bearer token (static, file or exec plugin)."""
    if access.token or not access.url.startswith("https://"):
        return access.token
    try:
        config = client_config(access.kubeconfig)
    except KubeConfigError as err:
        raise ExplainError(f"{err} (the controller's HTTPS port needs a bearer token: give --token)") from None
    client = KubeClient(config, user_agent="prom-autoscaler-controller/explain")
    await client.start()
    try:
        return await client.bearer_token()
    except KubeError as err:
        raise ExplainError(f"cannot get a token from the kubeconfig: {err}") from None
    finally:
        await client.close()


async def _from_controller(access: ControllerAccess, kind: str, namespace: str, name: str) -> Mapping[str, Any]:
    target = f"{access.url.rstrip('/')}/debug/decisions/{kind}/{namespace}/{name}"
    token = await _token(access)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    ssl_ctx: ssl.SSLContext | bool = client_ssl_context(ca_file=access.ca_file, insecure=access.insecure) \
        if target.startswith("https://") else True
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
            async with session.get(target, headers=headers, ssl=ssl_ctx) as resp:
                body = await resp.json(content_type=None)
                if resp.status != 200:
                    raise ExplainError(f"{target}: HTTP {resp.status}: {_problem(resp.status, body, token)}")
                return dict(body)
    except aiohttp.ClientConnectorCertificateError as err:
        raise ExplainError(f"{access.url}'s certificate was not accepted: {err.certificate_error} (the "
                           "controller's default certificate is self-signed: give --certificate-authority FILE "
                           "or --insecure-skip-tls-verify)") from None
    except aiohttp.ClientConnectorError as err:
        raise ExplainError(f"cannot connect to {access.url}: {err.os_error.strerror or err.os_error} (is the "
                           "controller's metrics port reachable there? e.g. kubectl -n NAMESPACE port-forward "
                           "pod/POD 8080, then --controller-url https://127.0.0.1:8080)") from None
    except asyncio.TimeoutError:
        raise ExplainError(f"{target} did not answer within 10s") from None
    except (aiohttp.ClientError, ValueError, OSError) as err:
        raise ExplainError(f"cannot read {target}: {err}") from None


def _problem(status: int, body: Any, token: str | None) -> str:
    """What went wrong, with what to do for 401/403 (a Status body's message, else the body)."""
    message = (body.get("message") or body.get("error") or body) if isinstance(body, Mapping) else body
    if status == 401:
        return f"{message} ({'the token was not accepted' if token else 'no bearer token'}: give --token, " \
               "e.g. $(kubectl create token SERVICEACCOUNT), or a kubeconfig whose user has a token)"
    if status == 404:
        return (f"{message} (only the leading replica decides: a standby answers 404 too, so port-forward to "
                "the pod named in kubectl get lease -n NAMESPACE prom-autoscaler-controller -o "
                "jsonpath='{.spec.holderIdentity}' (before the '_'); the controller decides a native HPA only "
                "with --preview-native-hpas, an object only in its --watch-namespace, a new one at its first "
                "sync; a deleted object is forgotten)")
    if status == 403:
        return f"{message} (grant get on the nonResourceURL /debug/decisions/*, e.g. the chart's " \
               "<release>-controller-metrics-reader ClusterRole)"
    return str(message)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="prom-autoscaler-controller explain",
                                description="Print the last scaling decision of an autoscaler, in words.")
    p.add_argument("object", metavar="NAMESPACE/NAME")
    p.add_argument("--hpa", action="store_true",
                   help="a native HPA previewed by the controller (needs --controller-url)")
    p.add_argument("-o", "--output", choices=("text", "json"), default="text")
    p.add_argument("--kubeconfig",
                   help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config, in a pod its account)")
    p.add_argument("--controller-url",
                   help="the controller's metrics port, e.g. https://localhost:8080 after kubectl port-forward "
                        "(full trace)")
    p.add_argument("--token", help="bearer token for --controller-url (default: the kubeconfig user's)")
    p.add_argument("--certificate-authority", dest="ca_file", metavar="FILE",
                   help="CA file to verify --controller-url's certificate")
    p.add_argument("--insecure-skip-tls-verify", action="store_true",
                   help="do not verify --controller-url's certificate (the controller's default one is self-signed)")
    return p


def _http_url(text: str) -> bool:
    try:
        parts = urlsplit(text)
        return parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
    except ValueError:  # a port that is not a number
        return False


def main(argv: Sequence[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(list(argv))
    namespace, _, name = str(args.object).partition("/")
    if not namespace or not name:
        parser.error(f"object {args.object!r}: expected NAMESPACE/NAME")
    if args.controller_url and not _http_url(args.controller_url):
        parser.error(f"--controller-url must be an http(s) URL with a host, e.g. https://127.0.0.1:8080 "
                     f"(got {args.controller_url!r})")
    if args.hpa and not args.controller_url:
        parser.error("--hpa reads the controller's /debug/decisions endpoint: give --controller-url")
    kind = "hpa" if args.hpa else "pas"
    try:
        access = ControllerAccess(url=args.controller_url or "", token=args.token, kubeconfig=args.kubeconfig,
                                  ca_file=args.ca_file, insecure=args.insecure_skip_tls_verify)
        doc = asyncio.run(_from_controller(access, kind, namespace, name) if args.controller_url
                          else _from_status(args.kubeconfig, namespace, name))  # fmt: skip
    except ExplainError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if args.output == "json":
        print(json.dumps(doc, indent=2, sort_keys=True))
    else:
        title = f"{'HorizontalPodAutoscaler' if args.hpa else 'PromAutoscaler'} {namespace}/{name}"
        print(render(doc, title=title))
    return 0
