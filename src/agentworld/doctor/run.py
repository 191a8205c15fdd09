"""Check every endpoint of a :class:`~agentworld.doctor.config.DoctorConfig`, one after another.

One by one, not concurrently: latency and tokens/s are only meaningful on an otherwise idle
server, and a pool's endpoints are meant to serve the same model, so each gets the full checks.
"""

from __future__ import annotations

from agentworld.doctor import checks
from agentworld.doctor.config import DoctorConfig
from agentworld.doctor.findings import EndpointReport, Finding
from agentworld.doctor.predict import judge_verdict, predict, shipped_samples
from agentworld.doctor.probe import Probe
from agentworld.endpoints import JUDGE_KEY_ENV, MODEL_KEY_ENV, base_urls, secret
from agentworld.errors import AgentWorldError
from agentworld.redact import redact_url
from agentworld.schema import BenchSample


async def _endpoint(report: EndpointReport, probe: Probe, key_env: str) -> list[dict[str, object]] | None:
    cards = await checks.connect(report, probe, key_env)
    if cards is None or not await checks.chat(report, probe, key_env, cards):
        return None
    return cards


async def check_model(url: str, config: DoctorConfig, samples: list[BenchSample]) -> EndpointReport:
    report = EndpointReport("model", redact_url(url), config.model, max_tokens=config.max_tokens)
    key_env = f"--model-api-key or {MODEL_KEY_ENV[0]}"
    probe = Probe(url, secret(config.model_api_key), config.timeout_s, config.max_response_bytes)
    try:
        cards = await _endpoint(report, probe, key_env)
        if cards is None:
            return report
        await checks.context_length(report, probe, cards)
        for sample in samples:
            usable = report.usable
            await predict(report, probe, sample, config, key_env)
            if usable and not report.usable:
                return report
        after_chat = next(i for i, f in enumerate(report.findings) if f.check == "chat completion") + 1
        place = checks.PLACES[report.reasoning or "none"]
        report.findings.insert(after_chat, Finding("reasoning", "ok", place, {"field": report.reasoning}))
        return report
    finally:
        await probe.aclose()


async def check_judge(url: str, config: DoctorConfig, sample: BenchSample) -> EndpointReport:
    assert config.judge_model is not None
    report = EndpointReport("judge", redact_url(url), config.judge_model)
    key_env = f"--judge-api-key or {JUDGE_KEY_ENV}"
    probe = Probe(url, secret(config.judge_api_key), config.timeout_s, config.max_response_bytes)
    try:
        if await _endpoint(report, probe, key_env) is not None:
            await judge_verdict(report, probe, sample, config, key_env)
        return report
    finally:
        await probe.aclose()


async def examine(config: DoctorConfig) -> list[EndpointReport]:
    """The report of each world-model endpoint, then of each judge endpoint.

    Raises:
        AgentWorldError: an unreadable URL list or a --domains entry without a shipped sample.
    """
    try:
        urls = base_urls(config.model_base_url or "")
        judges = base_urls(config.judge_base_url) if config.judge_base_url else []
    except ValueError as exc:
        raise AgentWorldError(f"base URL: {exc}") from None
    samples = shipped_samples(config.domains)
    reports = [await check_model(url, config, samples) for url in urls]
    reports += [await check_judge(url, config, samples[0]) for url in judges]
    return reports
