"""The review policy: the rubric's `review:` section (which slices always need people, how many, what approval).

    review:
      required_domains: [customer_support, medical, legal]   # the default; cases tagged domain=<one of these>
      domain_tag: domain                                     # the tag that names a case's domain
      required_slices: [{task: shifted}]                     # more slices that always need review
      min_reviewed: 10                                       # labelled cases per required slice at least (all, if fewer)
      min_approval: 0.9                                      # human approval each required slice must reach
      confidence: 0.95                                       # ... as a one-sided lower bound at this confidence
      show_auto: false                                       # reviewers see no automatic verdict (blind review)
      labels_per_case: 1                                     # 2: two reviewers label each case, disagreements adjudicated
      sample:
        seed: 0
        stratify_by: [suite, domain]                         # strata: the combinations of these slice keys
        per_slice: 5                                         # cases drawn from each stratum
        quotas: [{slice: {domain: medical}, n: 20}]          # at least n from this slice
        oversample: {fail: 3, answer_fail: 3, format_fail: 3, judge_unsure: 3}  # draw weight relative to a pass
        audit: 0.05                                          # share of all cases drawn at random on top

A rubric without the section gets these defaults, so high-risk domains are never released unreviewed;
`required_domains: []` turns the requirement off.

Approval gates on a one-sided bound like every other rate, so the labels a required slice needs follow from it:
at least `min_reviewed`, and at least the fewest that, all approving, give a lower bound of `min_approval`
(25 at 0.9 and 0.95; every case of a slice that has fewer, since a slice labelled whole needs no bound).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import field
from typing import TYPE_CHECKING, Any

from pydantic import ConfigDict, Field

from ..data_classes import dataclass
from ..model_base import Model
from ..record.review_outcome import oversample_weights
from ..stats.intervals import needed_n_for_rate
from .read_doc import read_doc

if TYPE_CHECKING:
    from ..record.records import CaseRecord

__all__ = ["ReviewPolicy", "SamplePolicy", "Quota", "DEFAULT_REQUIRED_DOMAINS", "parse_policy", "slice_name",
           "domain_family", "domain_families", "HIGH_RISK_NAMES", "KNOWN_DOMAINS"]

DEFAULT_REQUIRED_DOMAINS = ("customer_support", "medical", "legal")
HIGH_RISK_NAMES = {
    "medical": frozenset({
        "medical", "medicine", "medic", "healthcare", "health", "clinical", "clinic", "clinician", "patient",
        "patients", "hospital", "nursing", "nurse", "pharmacy", "pharmaceutical", "pharma", "drug", "drugs",
        "medication", "diagnosis", "diagnostic", "triage", "telehealth", "telemedicine", "mentalhealth", "therapy",
        "therapist", "psychology", "psychiatry", "psychiatric", "oncology", "cardiology", "radiology", "neurology",
        "pediatrics", "paediatrics", "pediatric", "dermatology", "surgery", "surgical", "dental", "dentistry",
        "obstetrics", "gynecology", "emergency", "icu", "ehr", "emr", "biomedical",
        # French, Spanish, Portuguese, Italian, German (accents folded: médical -> medical, santé -> sante)
        "medecine", "sante", "medico", "medica", "medicina", "salud", "saude", "sanitario", "sanidad", "paciente",
        "medizin", "medizinisch", "gesundheit", "krankenhaus", "arzt", "klinik", "klinisch", "pflege",
        "의료", "의학", "건강", "진료", "병원", "환자", "医疗", "医学", "医療", "病院", "患者", "健康"}),
    "legal": frozenset({
        "legal", "law", "laws", "lawyer", "lawyers", "attorney", "litigation", "juridical", "court", "courts",
        "paralegal", "legaltech", "contract", "contracts", "clause", "clauses", "notary", "notarial", "judicial",
        "jurisprudence", "statute", "statutory",
        "juridique", "droit", "avocat", "juridico", "derecho", "abogado", "legale", "avvocato", "recht", "rechtlich",
        "juristisch", "anwalt", "rechtsanwalt", "vertrag", "vertragsrecht",
        "법률", "법무", "법", "계약", "法律", "法務", "法务", "合同", "契約"}),
    "customer_support": frozenset({
        "support", "customersupport", "customerservice", "customercare", "customersuccess", "helpdesk",
        "servicedesk", "techsupport", "technicalsupport", "cs", "callcenter", "callcentre", "contactcenter",
        "contactcentre", "aftersales", "complaints", "ticketing",
        "serviceclient", "assistance", "atencionalcliente", "soporte", "suporte", "atendimento", "assistenza",
        "kundenservice", "kundendienst", "kundensupport",
        "고객지원", "고객센터", "상담", "고객서비스", "客服", "客户服务", "顾客服务", "カスタマーサポート", "サポート"}),
}
"""How each high-risk domain may be spelled in a case's tag, in several languages with its specialties and
synonyms: a value matches when, folded (NFKC, case, accents, separators: `_words`), it or any of its words is one
of these names, or its words joined are."""
KNOWN_DOMAINS = frozenset({"general", "billing", "sales", "marketing", "finance", "travel", "web", "coding", "code",
                           "math", "chitchat", "chat", "retail", "education", "shopping", "search", "other"})
"""Domains that are not high-risk by default: `validate` warns of any value neither these nor a high-risk name."""


def slice_name(slice_: dict[str, Any]) -> str:
    """{'domain': 'medical', 'suite': 'x'} -> 'domain=medical,suite=x' (the name reports use)."""
    return ",".join(f"{k}={v}" for k, v in slice_.items())


@dataclass(frozen=True)
class Quota:
    """At least `n` cases of `slice` go into the sample (fewer when the slice has fewer)."""

    slice: dict[str, Any]
    n: int

    def as_dict(self) -> dict[str, Any]:
        return {"slice": dict(self.slice), "n": self.n}


@dataclass(frozen=True)
class SamplePolicy:
    """How the review sample is drawn: seeded, stratified, cases that failed a check over-sampled, an audit share."""

    seed: int = 0
    stratify_by: tuple[str, ...] = ("suite", "domain")
    per_slice: int = 5
    quotas: tuple[Quota, ...] = ()
    oversample: dict[str, Any] = field(default_factory=lambda: {"fail": 3.0, "answer_fail": 3.0, "format_fail": 3.0,
                                                       "judge_unsure": 3.0})
    audit: float = 0.05

    def __post_init__(self) -> None:
        # 'borderline', the name before the outcome was split, weighs each of its parts (outcome.oversample_weights)
        object.__setattr__(self, "oversample", oversample_weights(self.oversample))

    def as_dict(self) -> dict[str, Any]:
        return {
            "seed": self.seed, "stratify_by": list(self.stratify_by), "per_slice": self.per_slice,
            "quotas": [q.as_dict() for q in self.quotas], "oversample": dict(self.oversample), "audit": self.audit,
        }


@dataclass(frozen=True)
class ReviewPolicy:
    """Which slices need human review, how many labels each needs, and the approval the gate requires."""

    required_domains: tuple[str, ...] = DEFAULT_REQUIRED_DOMAINS
    domain_tag: str = "domain"
    required_slices: tuple[dict[str, Any], ...] = ()
    min_reviewed: int = 10
    min_approval: float = 0.9
    sample: SamplePolicy = field(default_factory=SamplePolicy)
    confidence: float = 0.95
    """Approval gates on its one-sided Wilson bound at this confidence (effective n of the post-stratified
    estimate); the point value decides only for a slice whose every case is labelled."""
    show_auto: bool = False
    """The review CSV shows the automatic verdict and its reasons (auto_* columns). Off by default: a reviewer shown
    'pass' approves more (anchoring); the gate reads the verdict from the run record, never from the CSV."""
    unplaced_domains: str = "warn"
    """A domain value placed neither as high-risk nor as known low-risk (`unrecognised`): 'warn' names it in the
    verdict line and report.json `obligations`; 'require' makes its cases need review as a required domain's."""
    labels_per_case: int = 1
    """Independent labels a sampled case needs. At 2 a case counts as reviewed when two reviewers agree or an
    adjudicator labelled it; a disagreement without an adjudicator's label keeps review pending."""
    reviewers: tuple[tuple[str, str], ...] = ()
    """(name, Ed25519 public key in PEM) of each reviewer whose signed labels file counts; empty: any labels
    file imported counts (a local `review import`)."""
    label_max_age_days: float = 90.0
    """A guard or judge label kept from an earlier run counts for this many days after it was given."""

    def labels_needed(self, cases: int) -> int:
        """Labels a required slice of `cases` cases needs before its approval bound can pass: `min_reviewed`, and
        the fewest that, all approving, reach `min_approval` at `confidence` (all its cases when it has fewer)."""
        fewest = needed_n_for_rate(1.0, self.min_approval, higher_is_better=True, confidence=self.confidence)
        return min(cases, max(self.min_reviewed, fewest if fewest is not None else cases))

    def why_needed(self, needed: int, cases: int, approval: float | None) -> str | None:
        """Why a required slice of `cases` cases needs `needed` labels when that is more than `min_reviewed`, e.g.
        '25 labels, not min_reviewed 10: fewer, even all approving, keep the approval's one-sided 95% lower bound
        under min_approval 0.9'; None when it needs no more. `approval`: the slice's approval so far."""
        if needed <= self.min_reviewed:
            return None
        head = f"{needed} labels, not min_reviewed {self.min_reviewed}: "
        bound = f"the approval's one-sided {self.confidence:.0%} lower bound"
        if needed > self.labels_needed(cases) and approval is not None:
            return head + (f"at the approval so far ({approval:.0%}) {bound} and its upper bound straddle "
                           f"min_approval {self.min_approval:g}; about this many decide it")
        return head + f"fewer, even all approving, keep {bound} under min_approval {self.min_approval:g}"

    def required(self, records: Iterable[CaseRecord]) -> list[dict[str, Any]]:
        """The required slices present in the run: one per spelling of a required domain found ('Medical',
        'healthcare' and 'clinical' are all medical), then `required_slices`."""
        found = {str(r.tags.get(self.domain_tag)) for r in records if r.tags.get(self.domain_tag) is not None}
        wanted = {domain_family(d) for d in self.required_domains}
        unplaced = set(self.unrecognised(found)) if self.unplaced_domains == "require" else set()
        out = [{self.domain_tag: d} for d in sorted(found, key=lambda d: (_rank(domain_family(d), self), d))
               if domain_families(d) & wanted or d in unplaced]  # 'health law' is legal too
        return out + [dict(s) for s in self.required_slices if dict(s) not in out]

    def unrecognised(self, values: Iterable[object]) -> list[str]:
        """Domain tag values that are neither a high-risk domain (however spelled), a required one, nor a known
        low-risk one: `validate` warns of each, since a high-risk domain it cannot recognise goes unreviewed."""
        wanted = {domain_family(d) for d in self.required_domains}
        return sorted({str(v) for v in values if domain_family(v) not in wanted | set(HIGH_RISK_NAMES)
                       and _words(v)[1] not in KNOWN_DOMAINS})

    def as_dict(self) -> dict[str, Any]:
        return {
            "required_domains": list(self.required_domains), "domain_tag": self.domain_tag,
            "required_slices": [dict(s) for s in self.required_slices], "min_reviewed": self.min_reviewed,
            "min_approval": self.min_approval, "confidence": self.confidence, "show_auto": self.show_auto,
            "labels_per_case": self.labels_per_case, "sample": self.sample.as_dict(),
            **({"unplaced_domains": self.unplaced_domains} if self.unplaced_domains != "warn" else {}),
            # written only when set, so the effective rubric sha256 of every rubric without them stays the same
            **({"reviewers": [{"name": n, "key": k} for n, k in self.reviewers]} if self.reviewers else {}),
            **({"label_max_age_days": self.label_max_age_days} if self.label_max_age_days != 90.0 else {}),
        }


_MAX_TAG_CHARS = 1024
"""A domain tag value is placed by its first this many characters (a name, never a document)."""


def _words(value: object) -> tuple[list[str], str]:
    """A tag value's words and the words joined: NFKC-normalised (full-width and compatibility forms), case
    folded, accents removed ('Médical' -> 'medical'), split at anything not a letter or digit."""
    text = unicodedata.normalize("NFKC", str(value)[:_MAX_TAG_CHARS]).casefold()  # NFKC can grow a text 18x
    text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    text = unicodedata.normalize("NFC", text)  # Hangul and kana recomposed after the accents are gone
    words = [w for w in "".join(c if c.isalnum() else " " for c in text).split() if w]
    return words, "".join(words)


def domain_families(value: object) -> set[str]:
    """Every high-risk domain a tag value names ('medical-legal', 'health law': medical and legal), else the value
    itself, folded: a value naming a required domain among others is that domain's too."""
    words, joined = _words(value)
    found = {family for family, names in HIGH_RISK_NAMES.items()
             if joined in names or joined == family.replace("_", "") or any(w in names for w in words)}
    return found or {joined}


def domain_family(value: object) -> str:
    """The high-risk domain a tag value names however it is spelled ('Medical', 'health-care', 'clinical' ->
    'medical'; 'Customer Service' -> 'customer_support'), the first in HIGH_RISK_NAMES' order when it names
    several, else the value itself, case folded and joined."""
    found = domain_families(value)
    return next((family for family in HIGH_RISK_NAMES if family in found), next(iter(found)))


def _rank(family: str, policy: ReviewPolicy) -> int:
    order = [domain_family(d) for d in policy.required_domains]
    return order.index(family) if family in order else len(order)


class _Doc(Model):
    model_config = ConfigDict(frozen=True, extra="allow")


class QuotaDoc(_Doc):
    slice: dict[str, Any]
    n: int


class ReviewerDoc(_Doc):
    name: str
    key: str


class SampleDoc(_Doc):
    """`review.sample:` as written."""

    seed: int = SamplePolicy.seed
    stratify_by: list[str] = Field(default_factory=lambda: list(SamplePolicy.stratify_by))
    per_slice: int = SamplePolicy.per_slice
    quotas: list[QuotaDoc] = Field(default_factory=list)
    oversample: dict[str, Any] = Field(default_factory=dict)
    audit: float = SamplePolicy.audit


class ReviewDoc(_Doc):
    """A rubric's `review:` as written."""

    required_domains: list[str] = Field(default_factory=lambda: list(DEFAULT_REQUIRED_DOMAINS))
    domain_tag: str = ReviewPolicy.domain_tag
    required_slices: list[dict[str, Any]] = Field(default_factory=list)
    unplaced_domains: str = ReviewPolicy.unplaced_domains
    min_reviewed: int = ReviewPolicy.min_reviewed
    min_approval: float = ReviewPolicy.min_approval
    confidence: float = ReviewPolicy.confidence
    show_auto: bool = ReviewPolicy.show_auto
    labels_per_case: int = ReviewPolicy.labels_per_case
    reviewers: list[ReviewerDoc] = Field(default_factory=list)
    label_max_age_days: float = ReviewPolicy.label_max_age_days
    sample: SampleDoc | None = None


def parse_policy(raw: dict[str, Any] | None) -> ReviewPolicy:
    """The policy from a rubric's `review:` mapping (already schema-validated); None gives the defaults."""
    if raw is None:
        return ReviewPolicy()
    doc = read_doc(ReviewDoc, raw, None)
    sample = doc.sample or SampleDoc()
    return ReviewPolicy(
        required_domains=tuple(doc.required_domains), domain_tag=doc.domain_tag,
        required_slices=tuple(dict(s) for s in doc.required_slices), unplaced_domains=doc.unplaced_domains,
        min_reviewed=doc.min_reviewed, min_approval=doc.min_approval, confidence=doc.confidence,
        show_auto=doc.show_auto, labels_per_case=doc.labels_per_case,
        reviewers=tuple((r.name, r.key) for r in doc.reviewers), label_max_age_days=doc.label_max_age_days,
        sample=SamplePolicy(
            seed=sample.seed, stratify_by=tuple(sample.stratify_by), per_slice=sample.per_slice,
            quotas=tuple(Quota(dict(q.slice), q.n) for q in sample.quotas),
            oversample={**SamplePolicy().oversample, **oversample_weights(sample.oversample)}, audit=sample.audit,
        ),
    )
