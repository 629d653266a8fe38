"""The accuracy stage's typed result."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, with_config
from typing_extensions import NotRequired, TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

from llm_adapt import rundir
from llm_adapt.engines.endpoint import EndpointRecord
from llm_adapt.messages import Said
from llm_adapt.models.source import ModelRef
from llm_adapt.results import StageResult
from llm_adapt.rounding_basis import RoundingBasis
from llm_adapt.status import Status

__all__ = ["AccuracyResult", "Candidate", "CategoryStats", "ChannelConcentration", "Check", "EndpointAccuracyResult", "EndpointSection", "Diagnosis", "GraphModes", "GreedyRow", "KernelSpread", "LayerRow", "LayersResult", "LocatedFault",
           "LogitStats", "ModeFigures", "PartError", "PartRow", "Peak", "Perplexity", "RoundingBasis", "RoundoffBasis", "Row", "RunnerReport", "Samples",
           "Sharpness", "SkippedPrompt", "TensorStats", "Verdict", "VsFloor"]

# The records that cross the accuracy rooms (measure -> compare -> verdict -> result -> report). They are
# typed dicts: pydantic checks each declared field where a result model holds them, and they stay plain
# dicts, so the JSON files keep their shape and every reader keeps its access. Fields not declared (a
# measure's own extras) are kept as they are.
CheckStatus = Literal["pass", "warn", "fail", "unjudged"]  # unjudged: decided nothing (status.UNJUDGED)


@with_config(ConfigDict(extra="allow"))
class Check(TypedDict):
    """One judged check: its English words, its status, and the key and arguments that word it in any
    language (messages/accuracy.py)."""

    name: str
    value: Any  # the figure itself, or its words
    status: CheckStatus
    threshold: str | None
    source: str | None
    key: str
    args: dict[str, Any]


@with_config(ConfigDict(extra="allow"))
class Verdict(TypedDict):
    """PASS / WARN / FAIL with the checks that decided it and one reason per check out of line."""

    status: Status
    reasons: list[Said]
    checks: NotRequired[list[Check]]
    noise_floor: NotRequired[str | None]  # the floor a runner was judged against


@with_config(ConfigDict(extra="allow"))
class RoutingCounts(TypedDict):
    """A MoE layer's routed tokens against the gold's: those whose experts changed (flipped), within the
    gold's own rounding there (near_tie), and beyond it (genuine) (routing.RoutingCount.summary)."""

    tokens: int
    flipped: int
    near_tie: int
    genuine: int


@with_config(ConfigDict(extra="allow"))
class ServedRouting(RoutingCounts, total=False):
    """A served router's routing of one sequence (routing.served_routing): the counts, and on the tokens that
    kept their experts the largest weight difference, absolute and against the dtype's rounding."""

    weight_error_max: float | None
    weight_rounding_ratio: float | None


@with_config(ConfigDict(extra="allow"))
class RoutingVerdict(ServedRouting, total=False):
    """A served MoE layer's router over every prompt (routing.routing_verdict): wrong or clean, by its rule."""

    verdict: Literal["wrong", "clean"]
    rule: str


@with_config(ConfigDict(extra="allow"))
class LayerRow(TypedDict):
    """One tensor of a runner against the gold: the error at it (full) and of the layer alone, fed the
    gold's input (local), with the ratios to the floor where there is one."""

    name: str
    rel_l2: float
    local_rel_l2: NotRequired[float]
    cos_min: NotRequired[float | None]
    max_abs: NotRequired[float | None]
    ratio: NotRequired[float | None]  # rel. L2 against the floor's
    local_ratio: NotRequired[float | None]
    rel_spread: NotRequired[float]  # the ratio's measured relative spread (the judge allows 1 + K x it)
    local_rel_spread: NotRequired[float]
    allowed: NotRequired[float]  # an earlier version's: the allowed ratio itself, computed when measured
    local_allowed: NotRequired[float]


@with_config(ConfigDict(extra="allow"))
class PartRow(TypedDict):
    """One part of a located layer (its norm, attention, MLP), fed the gold's input, judged as layers are."""

    name: str
    rel_l2: float
    ratio: NotRequired[float | None]
    basis: NotRequired[str]  # the words of its RoundingBasis, stored beside its fields
    excess: NotRequired[bool]


@with_config(ConfigDict(extra="allow"))
class LocatedFault(TypedDict):
    """The first layer whose own error is out of line, against its basis (RoundingBasis.fields) and, where
    the part pass ran, the part of it out of line."""

    name: str
    local_rel_l2: float
    ratio: float | None
    basis: str
    part: NotRequired[str | None]
    parts: NotRequired[list[PartRow]]
    parts_skipped: NotRequired[Any]  # why the part pass did not run
    routing: NotRequired[RoutingVerdict | None]  # a served MoE layer's router against the gold's


class Row(BaseModel):
    model_config = ConfigDict(extra="allow")


@with_config(ConfigDict(extra="allow"))
class GreedyRow(TypedDict):
    """One prompt's greedy generation against the gold's: where it first diverged and why (the gold's own
    margin there: a near-tie or a genuine divergence; a stop one side made early or late). The reference's
    own rows carry its tokens and text alone."""

    id: str
    category: NotRequired[str]
    ref_tokens: NotRequired[int]
    target_tokens: NotRequired[int]
    matched_tokens: NotRequired[int]
    exact: NotRequired[bool]
    first_divergence: NotRequired[int | None]
    divergence: NotRequired[Literal["near-tie", "genuine"] | None]
    stop: NotRequired[Literal["early", "late"] | None]
    ref_margin: NotRequired[float | None]
    mutual_topk: NotRequired[bool | None]
    ref_text: NotRequired[str]
    target_text: NotRequired[str]


class Peak(TypedDict):
    """A tensor's largest |value| in the gold (reference.activation_peaks), in the order a forward reaches it."""

    name: str
    max_abs: float


class Sharpness(TypedDict):
    """How decisive the gold's own next-token distributions are (metrics.logit_sharpness)."""

    positions: int
    decisive_positions: int  # top-1 more than tie_margin nats above top-2
    tie_margin: float
    entropy_ratio: float  # mean entropy / ln V (1.0: flat); NaN where no position was measured


@with_config(ConfigDict(extra="allow"))
class LogitStats(TypedDict, total=False):
    """A runner's next-token distributions against the gold's, over every teacher-forced position (the
    reference's own: how decisive they are, metrics.logit_sharpness)."""

    positions: int
    kl_mean: float | None
    kl_sem: float | None
    same_top1: float | None
    same_top1_err: float | None
    decisive_positions: int
    same_top1_decisive: float | None
    tie_margin: float
    topk_overlap: float | None
    entropy_ratio: float | None  # the reference's own: mean entropy / ln V (metrics.logit_sharpness)


@with_config(ConfigDict(extra="allow"))
class Perplexity(TypedDict, total=False):
    """Perplexity on the corpus: the gold's (`ref`), the runner's, and the log of their ratio with its error."""

    ref: float
    target: float
    ln_ratio: float | None
    ln_ratio_sem: float | None
    tokens: int


@with_config(ConfigDict(extra="allow"))
class VsFloor(TypedDict):
    """A target's mean KL against its floor's, and the ratio chance allows it (compare._vs_floor)."""

    kl_ratio: float | None
    kl_allowed: NotRequired[float]  # an earlier version's: 1 + k x kl_spread, computed when measured
    kl_spread: float  # the bootstrap's and the kernel's spreads, in quadrature
    kl_spread_bootstrap: float  # relative sd of the ratio, prompts resampled
    kl_spread_kernel: float | None  # the floor's own kl_mean spread (KernelSpread.kl_mean)
    k: float


@with_config(ConfigDict(extra="allow"))
class KernelSpread(TypedDict):
    """How much a floor moves when only its kernel path changes (measure.kernel_spread): relative differences."""

    method: str
    kl_mean: float
    variant: NotRequired[str]  # the floor's runner rerun with another kernel (files of before may lack it)
    variant_kl_mean: NotRequired[float]
    layers: NotRequired[dict[str, float]]  # per tensor: the relative change of its rel. L2 error
    seconds: NotRequired[float]


@with_config(ConfigDict(extra="allow"))
class Samples(TypedDict, total=False):
    """Per-prompt sums a runner keeps for bootstrap spreads."""

    kl_by_prompt: list[float]


@with_config(ConfigDict(extra="allow"))
class RoundoffBasis(TypedDict):
    """What a target's layers were judged against without a floor (verdict.roundoff_basis): the fields of
    a RoundingBasis of kind "roundoff", its English words and the relative error it allows."""

    basis: str
    kind: Literal["roundoff"]
    factor: float
    dtype: str
    contraction: int | None
    allowed: float


class SkippedPrompt(TypedDict):
    """A prompt left out of a comparison (too long for the served length, say), and why."""

    id: str
    reason: Said


@with_config(ConfigDict(extra="allow"))
class EndpointSection(TypedDict):
    """One section of endpoint accuracy (tokenization, teacher-forced, perplexity, greedy): done with its
    figures (kept as the section writes them), or not run / unsupported with the reason (a message)."""

    status: Literal["done", "not run", "unsupported"]
    reason: NotRequired[Said]


@with_config(ConfigDict(extra="allow"))
class TopkView(TypedDict, total=False):
    """The served model's (or the floor's) next-token distributions against the gold's through the top-k
    view the API returns: a lower bound of the KL, same top-1 (and on the decisive positions, outside the
    gold's tie margin), top-k agreement. None where nothing was measured (NaN in memory)."""

    positions: int
    kl_lb_mean: float | None
    kl_lb_sem: float | None
    kl_lb_p50: float | None
    kl_lb_p95: float | None
    kl_lb_p99: float | None
    kl_lb_p99_9: float | None
    kl_lb_max: float | None
    same_top1: float | None
    same_top1_err: float | None
    decisive_positions: int
    same_top1_decisive: float | None
    same_top1_decisive_err: float | None
    tie_margin: float
    topk_agree: float | None
    dlogprob_mean: float | None
    dlogprob_abs_mean: float | None


@with_config(ConfigDict(extra="allow"))
class ViewSpread(TypedDict, total=False):
    """How much a clean server's KL ratio to the floor moves by chance (accuracy/endpoint.py's _spread), from the
    floor alone: its kernel variant against it with runs of positions resampled (bootstrap), the variant's
    offset (kernel), the two in quadrature (relative), and K the allowance multiplies it by. An earlier version
    bootstrapped the server's own ratio (source absent): a fault on a few prompts widened it."""

    bootstrap: float | None
    bootstrap_units: int
    bootstrap_by_prompt: float | None  # an earlier version's whole-prompt bootstrap of the server's ratio
    bootstrap_served: float | None  # the server's own ratio, resampled: for the record, never the allowance
    source: str  # "floor": the allowance's spread is the floor's
    kernel: float | None
    variant_kl_lb_mean: float | None
    relative: float | None
    k: float


@with_config(ConfigDict(extra="allow"))
class CategoryStats(TypedDict):
    """A prompt category's greedy generations against the reference's (greedy.by_category)."""

    prompts: int
    exact: int
    matched_tokens: int
    ref_tokens: int
    near_tie: int  # divergences inside the tie margin
    genuine: int  # divergences outside it
    early_stop: NotRequired[int]
    late_stop: NotRequired[int]
    exact_rate: float
    token_match_rate: float


class ChannelConcentration(TypedDict):
    """How much of a part's squared error its worst channels hold (sublayer.channel_concentration)."""

    count: int  # the worst channels counted
    of: int  # the part's output channels
    share: float  # their share of the error
    concentrated: bool
    top: list[int]  # the worst channels, at most 8


class HeadConcentration(TypedDict):
    """Which query heads hold an attention's error (sublayer.head_concentration): the fewest, worst first, that
    hold most of it, and whether they are few enough to name (one head, one KV head's group, a third at most)."""

    heads: list[int]
    of: int
    share: float
    concentrated: bool
    kv_head: int | None
    group: int


class TensorStats(TypedDict):
    """A tensor against the reference's over every prompt (metrics.TensorAccumulator.summary)."""

    rel_l2: float
    cos_mean: float
    cos_min: float
    max_abs: float
    max_rel: float
    thousandth_ratio: float
    sqnr_db: float
    nan_mismatch: bool
    cos_tensor: float
    share_over: dict[str, float]


class PartError(TensorStats):
    """One part of a layer (attention, MLP, a norm) against the reference's over every prompt: the tensor
    statistics, the squares per prompt, the channel concentration."""

    diff_sq_by_prompt: list[float]
    channels: ChannelConcentration
    heads: NotRequired[HeadConcentration]  # the attention's per query head (sublayer.HeadErrors.summary)


class RunnerReport(BaseModel):
    """One runner compared with the reference: per-tensor table, logits, greedy tokens, perplexity."""

    model_config = ConfigDict(extra="forbid")
    label: str
    device: str
    dtype: str
    quant: str | None = None
    model_path: str | None = None
    load_seconds: float
    run_seconds: float
    quantized_linears: int = 0
    streaming: bool = False  # reference only: computed one layer at a time from the shards
    reused: Said | None = None  # measured by an earlier call and read from the cache (accuracy/store.py): how
    layers: list[LayerRow]  # one row per tensor: full and local error, ratios to the floor
    depth_fit: dict[str, float]
    first_local_excess: LocatedFault | None  # where to look first
    first_nonfinite: str | None
    logits: LogitStats
    perplexity: Perplexity
    greedy: list[GreedyRow]
    greedy_by_category: dict[str, CategoryStats]
    floor: str | None = None  # label of the runner used as this one's noise floor
    vs_floor: VsFloor | None = None  # KL ratio to the floor and the ratio its spread allows
    roundoff_basis: RoundoffBasis | None = None  # no floor: what each layer's own error is judged against
    spread: KernelSpread | None = None  # floors only: how much the floor moves on another kernel path
    samples: Samples = {}  # per-prompt sums kept for bootstrap spreads
    template_mismatches: list[str] | None = None  # --target-model: prompts its own chat template renders differently
    verdict: Verdict | None = None


@with_config(ConfigDict(extra="allow"))
class AccuracyVerdict(TypedDict):
    """accuracy.json's verdict: the worst of the judged targets, each judged target's status, and the
    informational ones (a quantized form judged on its own) apart (verdict.accuracy_verdict)."""

    status: Status
    targets: dict[str, Status]
    informational: dict[str, Status]


@with_config(ConfigDict(extra="allow"))
class AccuracyPrompts(TypedDict, total=False):
    """The prompts the in-process comparison measured, and those it could not."""

    suite: str
    count: int
    skipped: list[SkippedPrompt]
    categories: list[str]
    tokens_compared: int
    generated_tokens: int
    corpus_tokens: int


@with_config(ConfigDict(extra="allow"))
class AccuracySettings(TypedDict, total=False):
    """The options the in-process comparison ran with (CompareOptions), and the reference it used."""

    max_new_tokens: int
    tie_margin: float
    top_k: int
    ppl_window: int
    corpus_tokens: int | None  # None: the corpus's every token
    local_factor: float
    reference: str
    reference_streaming: bool
    reference_why: dict[str, str]  # `--reference auto`: where the gold was placed and why, per language


class AccuracyResult(StageResult):
    KIND: ClassVar[str] = "accuracy"
    FILE: ClassVar[str | None] = rundir.ACCURACY

    model: ModelRef
    reference: RunnerReport  # the reference's own generations and timing (errors all zero)
    floors: list[RunnerReport]
    targets: list[RunnerReport]
    prompts: AccuracyPrompts
    settings: AccuracySettings
    verdict: AccuracyVerdict


@with_config(ConfigDict(extra="allow"))
class FloorSpread(TypedDict, total=False):
    """How the served floor's spread was measured (accuracy/measure.py, measure_floor)."""

    method: str
    variant: str


@with_config(ConfigDict(extra="allow"))
class EndpointSettings(TypedDict, total=False):
    """The options the endpoint check ran with, the served length, and the prompts it left out first."""

    prompts: str
    max_new_tokens: int
    top_k: int
    tie_margin: float
    served_max_model_len: int | None
    floor_spread: FloorSpread | None
    skipped_before_gold: list[SkippedPrompt]


# accuracy/diagnosis.py's answers, kept in endpoint_accuracy.json and layers.json
class ModeFigures(TypedDict):
    """One mode's endpoint verdict and served KL, for graph_vs_eager."""
    status: Status | None
    reasons: list[Any]
    kl: float | None
    decode_kl: float | None
    cause: NotRequired[Candidate | None]  # a tune trial's: graph mode, against the eager baseline


@with_config(ConfigDict(extra="allow"))
class Candidate(TypedDict):
    """One likely cause: a signature's figures (kept as its record writes them) with the cause in words
    and the command that tells more (CAUSES)."""
    cause: str
    next: str
    signature: str


class Diagnosis(TypedDict):
    """diagnose's answer: each candidate is a signature's figures with its cause and next command."""
    candidates: list[Candidate]
    unknown: bool
    rules: str


class GraphModes(TypedDict):
    """A graph deployment's escalation (run/stages.py's eager_against_graph): both modes' endpoint
    figures, where the eager check's result lies, and graph mode as the likely cause when only it is out of line."""
    graph: ModeFigures
    eager: ModeFigures
    eager_result: str
    cause: Candidate | None


class EndpointAccuracyResult(StageResult):
    KIND: ClassVar[str] = "endpoint_accuracy"
    FILE: ClassVar[str | None] = rundir.ENDPOINT_ACCURACY

    endpoint: EndpointRecord
    model: str  # the model id the server answers as
    reference: str
    floor: str | None
    settings: EndpointSettings
    gold_model: str | None = None  # the gold checkpoint's name, to tell a server of another model by its id
    sections: dict[str, EndpointSection]  # name -> its status and figures, or why it did not run
    verdict: Verdict | None = None
    diagnosis: Diagnosis | None = None  # likely causes when out of line (accuracy/diagnosis.py)
    gold_logits: Sharpness | None = None  # how decisive the gold's logits are


@with_config(ConfigDict(extra="allow"))
class CapturePlugin(TypedDict, total=False):
    """What the capture plugin reported at engine start (engines/capture_plugin.py's ready file)."""

    pid: int
    mode: str
    names: list[str]  # the tensors it hooks, in forward order
    model: str  # the class vLLM built


@with_config(ConfigDict(extra="allow"))
class Capture(TypedDict, total=False):
    """How the layers were captured inside the engine (layers_served.capture_modes, then run_layers)."""

    mode: str  # the mode that ran: eager
    deploy_mode: str  # the deployment's: eager or graph
    eager_for_graph: bool
    escalated_from: str  # the endpoint verdict that escalated to this stage
    directory: str
    records: int
    plugin: CapturePlugin
    records_kept: bool


@with_config(ConfigDict(extra="allow"))
class LayersPrompts(TypedDict, total=False):
    """The prompts captured inside the engine, and those missing."""

    count: int
    captured: int
    missing: list[SkippedPrompt]  # not recorded by the engine's capture, and why
    tokens: int


class LayersResult(StageResult):
    KIND: ClassVar[str] = "layers"
    FILE: ClassVar[str | None] = rundir.LAYERS

    model: ModelRef
    endpoint: EndpointRecord
    capture: Capture
    reference: str
    floor: str | None
    served_dtype: str
    error_kind: str
    prompts: LayersPrompts
    layers: list[LayerRow]
    first_local_excess: LocatedFault | None
    verdict: Verdict
    seconds: dict[str, float]
    # a graph deployment's escalation: both modes' endpoint figures and the likely cause (run/stages.py)
    modes: GraphModes | None = None
