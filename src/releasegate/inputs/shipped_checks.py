"""The shipped schemas' validity tests (config, case, rubric, a forbidden-rules file), each answering as jsonschema's
`is_valid`. Written by scripts/compile_schemas.py from src/releasegate/schemas/: do not edit; run the script."""
# ruff: noqa
# mypy: ignore-errors
import re

from .schema_compiler import _is_integer, _is_number, _unique_items

_MISSING = object()
K = [
    'target',
    'suites',
    'rubric',
    1,
    4096,
    'extends',
    'backend',
    frozenset(('hf', 'hf_classifier', 'openai', 'replay')),
    1024,
    'base',
    'adapter',
    'merge',
    frozenset(('bfloat16', 'float16', 'float32')),
    'dtype',
    512,
    'threads',
    'batch_size',
    'bucket_by_length',
    frozenset(('cpu', 'cuda')),
    'device',
    'responses',
    re.compile('^https?://').search,
    2048,
    'base_url',
    'model',
    re.compile('^[A-Za-z_][A-Za-z0-9_]*$').search,
    128,
    'api_key_env',
    frozenset(('chat', 'completion')),
    'mode',
    'concurrency',
    0,
    'timeout_s',
    'stall_timeout_s',
    'connect_timeout_s',
    20,
    'retries',
    'max_response_bytes',
    'max_response_tokens',
    100000,
    'stop_after_errors',
    'strict_model',
    256,
    frozenset(()),
    'extra_body',
    64,
    re.compile('^[^\\r\\n\\u0000]*$').search,
    8192,
    'env',
    re.compile('^[A-Za-z_][A-Za-z0-9_]*$').search,
    frozenset(('env',)),
    re.compile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$").search,
    'headers',
    'secret_keys',
    'tokenizer',
    frozenset(('lean', 'openai')),
    'client',
    frozenset(('int8',)),
    'quantize',
    'draft',
    1000,
    'served_files',
    frozenset(('adapter', 'api_key_env', 'backend', 'base', 'base_url', 'batch_size', 'bucket_by_length', 'client', 'concurrency', 'connect_timeout_s', 'device', 'draft', 'dtype', 'extra_body', 'headers', 'max_response_bytes', 'max_response_tokens', 'merge', 'mode', 'model', 'quantize', 'responses', 'retries', 'secret_keys', 'served_files', 'stall_timeout_s', 'stop_after_errors', 'strict_model', 'threads', 'timeout_s', 'tokenizer')),
    frozenset(('hf',)),
    ('base',),
    frozenset(('hf_classifier',)),
    frozenset(('openai',)),
    ('base_url', 'model'),
    frozenset(('replay',)),
    ('responses',),
    32768,
    'max_new_tokens',
    'temperature',
    'top_p',
    16,
    'stop',
    'seed',
    100,
    'repeats',
    frozenset(('max_new_tokens', 'repeats', 'seed', 'stop', 'temperature', 'top_p')),
    'generation',
    'path',
    re.compile('^[A-Za-z0-9_.-]+$').search,
    200,
    'name',
    'limit',
    'type',
    frozenset(('bleu', 'chrf', 'exact', 'json_fields', 'judge', 'label', 'normalized', 'numeric', 'regex', 'rouge')),
    'fields',
    'labels',
    'pattern',
    'tolerance',
    'relative',
    frozenset(('rouge1', 'rouge2', 'rougeL', 'rougeLsum')),
    'variant',
    'min',
    re.compile('^[A-Za-z0-9_.-]{1,100}$').search,
    'criterion',
    65536,
    'instructions',
    2,
    'scale',
    'pass_mark',
    'reference',
    frozenset(('criterion', 'fields', 'instructions', 'labels', 'min', 'pass_mark', 'pattern', 'reference', 'relative', 'scale', 'tolerance', 'type', 'variant')),
    frozenset(('regex',)),
    ('pattern',),
    frozenset(('rouge',)),
    ('min',),
    frozenset(('bleu', 'chrf')),
    frozenset(('judge',)),
    ('criterion',),
    ('instructions',),
    'answer',
    frozenset(('json', 'json_schema', 'max_length', 'regex')),
    'schema',
    'max_chars',
    'max_tokens',
    frozenset(('max_chars', 'max_tokens', 'pattern', 'schema', 'type')),
    frozenset(('json_schema',)),
    ('schema',),
    frozenset(('max_length',)),
    ('max_chars',),
    ('max_tokens',),
    'format',
    frozenset(('arrow', 'csv', 'disk', 'json', 'jsonl', 'parquet', 'tsv', 'xlsx')),
    re.compile('^[A-Za-z0-9][\\w.-]*/[\\w.-]+$').search,
    'hub',
    'config',
    re.compile('^[\\w.-]+$').search,
    'split',
    'revision',
    'sheet',
    frozenset(('config', 'format', 'hub', 'path', 'revision', 'sheet', 'split')),
    ('hub',),
    ('path',),
    'source',
    'expected',
    'id',
    'prompt',
    'messages',
    re.compile('^[A-Za-z0-9_.-]{1,100}$').search,
    'tags',
    frozenset(('expected', 'id', 'messages', 'prompt', 'tags')),
    'columns',
    float('inf'),
    'user',
    'system',
    frozenset(('system', 'user')),
    'template',
    'n',
    'per_stratum',
    18446744073709551615,
    frozenset(('population', 'sample')),
    'estimate',
    'by',
    frozenset(('by', 'estimate', 'n', 'per_stratum', 'seed')),
    'sample',
    frozenset(('answer', 'columns', 'format', 'limit', 'name', 'path', 'repeats', 'sample', 'source', 'template')),
    ('source',),
    ('columns',),
    frozenset(('api', 'self_hosted')),
    'hourly_usd',
    'input_usd_per_1m',
    'output_usd_per_1m',
    'price_table',
    'price_model',
    frozenset(('hourly_usd', 'input_usd_per_1m', 'mode', 'output_usd_per_1m', 'price_model', 'price_table')),
    frozenset(('self_hosted',)),
    ('hourly_usd',),
    'cost',
    'usd',
    'target_usd',
    'judge_usd',
    'guard_usd',
    'tokens',
    'wall_s',
    frozenset(('guard_usd', 'judge_usd', 'target_usd', 'tokens', 'usd', 'wall_s')),
    'budget',
    'dir',
    re.compile('^(?!\\.+$)[A-Za-z0-9_.-]+$').search,
    'run_id',
    frozenset(('dir', 'run_id')),
    'output',
    'rate',
    frozenset(('constant', 'gamma', 'poisson')),
    'arrival',
    'burstiness',
    'replay',
    'requests',
    'duration_s',
    'warmup',
    'start_rps',
    'max_rps',
    'slo',
    'factor',
    59,
    'requests_per_step',
    3600,
    'step_s',
    10,
    'refine',
    'ttft_ms_p50',
    'ttft_ms_p90',
    'ttft_ms_p95',
    'ttft_ms_p99',
    'tpot_ms_p50',
    'tpot_ms_p90',
    'tpot_ms_p95',
    'tpot_ms_p99',
    'e2e_ms_p50',
    'e2e_ms_p90',
    'e2e_ms_p95',
    'e2e_ms_p99',
    'error_rate',
    frozenset(('e2e_ms_p50', 'e2e_ms_p90', 'e2e_ms_p95', 'e2e_ms_p99', 'error_rate', 'tpot_ms_p50', 'tpot_ms_p90', 'tpot_ms_p95', 'tpot_ms_p99', 'ttft_ms_p50', 'ttft_ms_p90', 'ttft_ms_p95', 'ttft_ms_p99')),
    ('ttft_ms_p50',),
    ('ttft_ms_p90',),
    ('ttft_ms_p95',),
    ('ttft_ms_p99',),
    ('tpot_ms_p50',),
    ('tpot_ms_p90',),
    ('tpot_ms_p95',),
    ('tpot_ms_p99',),
    ('e2e_ms_p50',),
    ('e2e_ms_p90',),
    ('e2e_ms_p95',),
    ('e2e_ms_p99',),
    frozenset(('factor', 'max_rps', 'refine', 'requests_per_step', 'slo', 'start_rps', 'step_s')),
    'sweep',
    frozenset(('arrival', 'burstiness', 'concurrency', 'duration_s', 'rate', 'replay', 'requests', 'seed', 'sweep', 'warmup')),
    ('burstiness',),
    frozenset(('gamma',)),
    ('arrival',),
    'load',
    1000000,
    'system_file',
    4,
    10000,
    frozenset(('requests', 'system', 'system_file')),
    'prefix_cache',
    frozenset(('exact', 'semantic')),
    -1,
    'threshold',
    'thresholds',
    'ttl_s',
    'arrival_interval_s',
    'group_tag',
    'time_sensitive_tag',
    'time_sensitive_max_age_s',
    500,
    'local',
    frozenset(('api_key_env', 'base_url', 'batch_size', 'local', 'model', 'threads', 'timeout_s')),
    'embeddings',
    frozenset(('arrival_interval_s', 'embeddings', 'group_tag', 'mode', 'threshold', 'thresholds', 'time_sensitive_max_age_s', 'time_sensitive_tag', 'ttl_s')),
    'response_cache_probe',
    frozenset(('path', 'ttl_s')),
    'cache',
    'engine',
    frozenset(('ray',)),
    'workers',
    re.compile('^(none|auto|ray://\\S+|[^\\s/]+:[0-9]+)$').search,
    'address',
    'cpus_per_worker',
    'gpus_per_worker',
    frozenset(('address', 'cpus_per_worker', 'engine', 'gpus_per_worker', 'workers')),
    re.compile('^https?://').search,
    re.compile('^[A-Za-z_][A-Za-z0-9_]*$').search,
    frozenset(('json_object', 'json_schema', 'none')),
    'structured',
    4194304,
    'max_output_chars',
    frozenset(('fail', 'insufficient')),
    'on_error',
    frozenset(('input_usd_per_1m', 'output_usd_per_1m')),
    'price',
    frozenset(('instructions', 'pass_mark', 'reference', 'scale')),
    re.compile('^[A-Za-z0-9_.-]{1,100}$').search,
    'criteria',
    'baseline',
    frozenset(('adapter', 'api_key_env', 'backend', 'base', 'base_url', 'baseline', 'batch_size', 'cache', 'client', 'concurrency', 'connect_timeout_s', 'criteria', 'device', 'dtype', 'extra_body', 'headers', 'max_output_chars', 'max_response_bytes', 'max_response_tokens', 'max_tokens', 'model', 'on_error', 'price', 'prompt', 'responses', 'retries', 'secret_keys', 'stall_timeout_s', 'structured', 'system', 'temperature', 'threads', 'timeout_s', 'tokenizer')),
    'judge',
    frozenset(('classifier', 'llama_guard', 'shieldgemma')),
    'categories',
    'safe_labels',
    frozenset(('adapter', 'api_key_env', 'backend', 'base', 'base_url', 'batch_size', 'cache', 'categories', 'concurrency', 'connect_timeout_s', 'device', 'dtype', 'extra_body', 'format', 'headers', 'max_response_bytes', 'max_response_tokens', 'max_tokens', 'model', 'price', 'prompt', 'responses', 'retries', 'safe_labels', 'secret_keys', 'temperature', 'threads', 'timeout_s')),
    re.compile('^[A-Za-z0-9_.-]+$').search,
    'guards',
    'cases',
    'families',
    'files',
    frozenset(('cases', 'families', 'files')),
    'probes',
    'suite',
    'templates',
    'canaries',
    'canary_candidates',
    frozenset(('base', 'canaries', 'canary_candidates', 'max_new_tokens', 'suite', 'templates')),
    'leakage',
    32,
    'server',
    frozenset(('endpoint', 'llamacpp', 'vllm')),
    frozenset(('merged', 'per_request')),
    'lora',
    frozenset(('f16', 'f32', 'q4_0', 'q8_0')),
    'quant',
    'gguf',
    frozenset(('draft', 'ngram')),
    'kind',
    'n_max',
    frozenset(('draft', 'kind', 'n_max')),
    'speculative',
    'parallel',
    frozenset(('adapter', 'base', 'base_url', 'gguf', 'hourly_usd', 'lora', 'model', 'name', 'parallel', 'quant', 'server', 'speculative', 'threads')),
    'variants',
    'margin',
    'min_parity_share',
    frozenset(('margin', 'min_parity_share')),
    'variant_choice',
    frozenset(('budget', 'cache', 'cost', 'extends', 'generation', 'guards', 'judge', 'leakage', 'load', 'output', 'prefix_cache', 'probes', 'response_cache_probe', 'rubric', 'scale', 'seed', 'suites', 'target', 'variant_choice', 'variants')),
    re.compile('^[A-Za-z0-9_.:-]{1,200}$').search,
    'role',
    frozenset(('assistant', 'system', 'tool', 'user')),
    'content',
    'function',
    frozenset(('function',)),
    'arguments',
    1048576,
    frozenset(('arguments', 'name')),
    frozenset(('function', 'id', 'type')),
    'tool_calls',
    'tool_call_id',
    frozenset(('content', 'name', 'role', 'tool_call_id', 'tool_calls')),
    ('content',),
    frozenset(('tool',)),
    frozenset(('assistant',)),
    ('tool_calls',),
    re.compile('^[A-Za-z0-9_.-]{1,100}$').search,
    re.compile('^[A-Za-z0-9_.-]{1,64}$').search,
    'description',
    'parameters',
    'strict',
    frozenset(('description', 'name', 'parameters', 'strict')),
    frozenset(('function', 'type')),
    'tools',
    'tools_ref',
    frozenset(('auto', 'none', 'required')),
    frozenset(('name',)),
    'tool_choice',
    'call',
    frozenset(('forbidden', 'optional', 'required')),
    'optional',
    frozenset(('arguments', 'name', 'optional')),
    'calls',
    frozenset(('any', 'exact', 'sequence')),
    'order',
    'tool_results',
    'forbidden_tools',
    frozenset(('call', 'calls', 'forbidden_tools', 'order', 'tool_results')),
    'expect',
    'turns',
    frozenset(('answer', 'expect', 'expected', 'format', 'id', 'messages', 'prompt', 'tags', 'tool_choice', 'tools', 'tools_ref', 'turns')),
    ('messages',),
    ('prompt',),
    ('expected',),
    ('expect',),
    ('turns',),
    ('expect', 'turns'),
    ('tools', 'tools_ref'),
    'metric',
    'op',
    frozenset(('<', '<=', '>', '>=')),
    'slice',
    'min_samples',
    0.5,
    'confidence',
    frozenset(('load', 'quality')),
    'phase',
    'probe',
    frozenset(('confidence', 'metric', 'min_samples', 'name', 'op', 'phase', 'probe', 'slice', 'threshold')),
    'category',
    'regex',
    'phrases',
    frozenset(('guard', 'rules')),
    'guard',
    'codes',
    frozenset(('category', 'codes', 'description', 'guard', 'kind', 'phrases', 'regex')),
    ('regex',),
    ('phrases',),
    ('guard',),
    'forbidden',
    'module',
    re.compile('^[A-Za-z0-9_]+$').search,
    'key',
    frozenset(('key', 'module', 'name', 'slice')),
    'evaluate',
    frozenset(('auto', 'both', 'load', 'quality')),
    'latency_from',
    'stop_when_decided',
    'allow_insufficient',
    'allow_overrides',
    frozenset(('allow_overrides',)),
    'release',
    'max_client_lag_share',
    'max_itl_batched_share',
    'min_load_pair_share',
    'run',
    re.compile('^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$').search,
    'blessed',
    'reports',
    'max_age_days',
    frozenset(('inconclusive', 'warn')),
    'on_stale',
    re.compile('BEGIN PUBLIC KEY').search,
    frozenset(('key', 'name')),
    'signed_by',
    frozenset(('accuracy', 'e2e_ms', 'forbidden_rate', 'format_compliance', 'tpot_ms', 'ttft_ms')),
    'metrics',
    'accuracy',
    'format_compliance',
    'forbidden_rate',
    'ttft_ms',
    'tpot_ms',
    'e2e_ms',
    'margins',
    frozenset(('blessed', 'confidence', 'margins', 'max_age_days', 'metrics', 'on_stale', 'reports', 'run', 'signed_by')),
    'required_domains',
    'domain_tag',
    'required_slices',
    'min_reviewed',
    'min_approval',
    'show_auto',
    'labels_per_case',
    re.compile('BEGIN PUBLIC KEY').search,
    'reviewers',
    3650,
    'label_max_age_days',
    frozenset(('require', 'warn')),
    'unplaced_domains',
    'stratify_by',
    'per_slice',
    frozenset(('n', 'slice')),
    'quotas',
    'fail',
    'answer_fail',
    'format_fail',
    'judge_unsure',
    'borderline',
    frozenset(('answer_fail', 'borderline', 'fail', 'format_fail', 'judge_unsure')),
    'oversample',
    'audit',
    frozenset(('audit', 'oversample', 'per_slice', 'quotas', 'seed', 'stratify_by')),
    frozenset(('confidence', 'domain_tag', 'label_max_age_days', 'labels_per_case', 'min_approval', 'min_reviewed', 'required_domains', 'required_slices', 'reviewers', 'sample', 'show_auto', 'unplaced_domains')),
    'review',
    'min_agreement',
    'min_labels',
    'min_kappa',
    'max_order_inconsistency',
    frozenset(('confidence', 'max_order_inconsistency', 'min_agreement', 'min_kappa', 'min_labels')),
    frozenset(('allow_insufficient', 'baseline', 'confidence', 'criteria', 'evaluate', 'forbidden', 'judge', 'latency_from', 'max_client_lag_share', 'max_itl_batched_share', 'min_load_pair_share', 'name', 'release', 'review', 'stop_when_decided')),
    'rules',
    frozenset(('rules',)),
]


def _n2(v):
    if not isinstance(v, dict): return False
    if not K[31] <= len(v) <= K[42]: return False
    return True


def _n4(v):
    if not isinstance(v, dict): return False
    if K[48] not in v: return False
    p = v.get(K[48], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or K[49](p) is not None) and (not isinstance(p, str) or len(p) <= K[26])): return False
    if not K[50].issuperset(v): return False
    return True


def _n3(v):
    if not isinstance(v, dict): return False
    if not K[31] <= len(v) <= K[45]: return False
    for k, p in v.items():
        if k not in K[43] and not (((((isinstance(p, str)) and (not isinstance(p, str) or K[46](p) is not None) and (not isinstance(p, str) or len(p) <= K[47]))) + (_n4(p)) == 1)): return False
    for p in v:
        if not ((not isinstance(p, str) or K[51](p) is not None) and (not isinstance(p, str) or len(p) <= K[42])): return False
    return True


def _n1(v):
    if not isinstance(v, dict): return False
    if K[6] not in v: return False
    p = v.get(K[6], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[7])): return False
    p = v.get(K[9], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[8])): return False
    p = v.get(K[10], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) or p is None) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[11], _MISSING)
    if p is not _MISSING and not ((isinstance(p, bool))): return False
    p = v.get(K[13], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[12])): return False
    p = v.get(K[15], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[3]) and (not _is_number(p) or not p > K[14])): return False
    p = v.get(K[16], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[3]) and (not _is_number(p) or not p > K[4])): return False
    p = v.get(K[17], _MISSING)
    if p is not _MISSING and not ((isinstance(p, bool))): return False
    p = v.get(K[19], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[18])): return False
    p = v.get(K[20], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[23], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or K[21](p) is not None) and (not isinstance(p, str) or len(p) <= K[22])): return False
    p = v.get(K[24], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[14])): return False
    p = v.get(K[27], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or K[25](p) is not None) and (not isinstance(p, str) or len(p) <= K[26])): return False
    p = v.get(K[29], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[28])): return False
    p = v.get(K[30], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[3]) and (not _is_number(p) or not p > K[4])): return False
    p = v.get(K[32], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[33], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[34], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[36], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[31]) and (not _is_number(p) or not p > K[35])): return False
    p = v.get(K[37], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[8])): return False
    p = v.get(K[38], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[3])): return False
    p = v.get(K[40], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[31]) and (not _is_number(p) or not p > K[39])): return False
    p = v.get(K[41], _MISSING)
    if p is not _MISSING and not ((isinstance(p, bool))): return False
    p = v.get(K[44], _MISSING)
    if p is not _MISSING and not _n2(p): return False
    p = v.get(K[52], _MISSING)
    if p is not _MISSING and not _n3(p): return False
    p = v.get(K[53], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or all(((isinstance(i, str)) and (not isinstance(i, str) or len(i) >= K[3]) and (not isinstance(i, str) or len(i) <= K[42])) for i in p)) and (not isinstance(p, list) or len(p) <= K[45]) and _unique_items(p)): return False
    p = v.get(K[54], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[56], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[55])): return False
    p = v.get(K[58], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[57])): return False
    p = v.get(K[59], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[61], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or len(p) <= K[60]) and (not isinstance(p, list) or all(((isinstance(i, str)) and (not isinstance(i, str) or len(i) >= K[3])) for i in p))): return False
    if not K[62].issuperset(v): return False
    if not ((((((not isinstance(v, dict) or all(n in v for n in K[64])))) if ((not isinstance(v, dict) or ((K[6] not in v or ((isinstance(v[K[6]], str) and v[K[6]] in K[63])))))) else (True))) and (((((not isinstance(v, dict) or all(n in v for n in K[64])))) if ((not isinstance(v, dict) or ((K[6] not in v or ((isinstance(v[K[6]], str) and v[K[6]] in K[65])))))) else (True))) and (((((not isinstance(v, dict) or all(n in v for n in K[67])))) if ((not isinstance(v, dict) or ((K[6] not in v or ((isinstance(v[K[6]], str) and v[K[6]] in K[66])))))) else (True))) and (((((not isinstance(v, dict) or all(n in v for n in K[69])))) if ((not isinstance(v, dict) or ((K[6] not in v or ((isinstance(v[K[6]], str) and v[K[6]] in K[68])))))) else (True)))): return False
    return True


def _n5(v):
    if not isinstance(v, dict): return False
    p = v.get(K[71], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[3]) and (not _is_number(p) or not p > K[70])): return False
    p = v.get(K[72], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p < K[31])): return False
    p = v.get(K[73], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31]) and (not _is_number(p) or not p > K[3])): return False
    p = v.get(K[75], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or all(((isinstance(i, str)) and (not isinstance(i, str) or len(i) <= K[4])) for i in p)) and (not isinstance(p, list) or len(p) <= K[74])): return False
    p = v.get(K[76], _MISSING)
    if p is not _MISSING and not ((_is_integer(p))): return False
    p = v.get(K[78], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[3]) and (not _is_number(p) or not p > K[77])): return False
    if not K[79].issuperset(v): return False
    return True


def _n7(v):
    if not isinstance(v, dict): return False
    if K[86] not in v: return False
    p = v.get(K[86], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[87])): return False
    p = v.get(K[88], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or len(p) >= K[3]) and (not isinstance(p, list) or len(p) <= K[60]) and (not isinstance(p, list) or all(((isinstance(i, str)) and (not isinstance(i, str) or len(i) <= K[60])) for i in p))): return False
    p = v.get(K[89], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or len(p) >= K[3]) and (not isinstance(p, list) or len(p) <= K[60]) and (not isinstance(p, list) or all(((isinstance(i, str)) and (not isinstance(i, str) or len(i) <= K[60])) for i in p))): return False
    p = v.get(K[90], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[91], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p < K[31])): return False
    p = v.get(K[92], _MISSING)
    if p is not _MISSING and not ((isinstance(p, bool))): return False
    p = v.get(K[94], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[93])): return False
    p = v.get(K[95], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p < K[31])): return False
    p = v.get(K[97], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or K[96](p) is not None)): return False
    p = v.get(K[99], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[98])): return False
    p = v.get(K[101], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[100]) and (not _is_number(p) or not p > K[77])): return False
    p = v.get(K[102], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[3]) and (not _is_number(p) or not p > K[77])): return False
    p = v.get(K[103], _MISSING)
    if p is not _MISSING and not ((isinstance(p, bool))): return False
    if not K[104].issuperset(v): return False
    if not ((((((not isinstance(v, dict) or all(n in v for n in K[106])))) if ((not isinstance(v, dict) or ((K[86] not in v or ((isinstance(v[K[86]], str) and v[K[86]] in K[105])))))) else (True))) and (((((not isinstance(v, dict) or all(n in v for n in K[108])) and (not isinstance(v, dict) or ((K[95] not in v or ((not _is_number(v[K[95]]) or not v[K[95]] > K[3]))))))) if ((not isinstance(v, dict) or ((K[86] not in v or ((isinstance(v[K[86]], str) and v[K[86]] in K[107])))))) else (True))) and (((((not isinstance(v, dict) or all(n in v for n in K[108])) and (not isinstance(v, dict) or ((K[95] not in v or ((not _is_number(v[K[95]]) or not v[K[95]] > K[77]))))))) if ((not isinstance(v, dict) or ((K[86] not in v or ((isinstance(v[K[86]], str) and v[K[86]] in K[109])))))) else (True))) and (((((((not isinstance(v, dict) or all(n in v for n in K[111]))) or ((not isinstance(v, dict) or all(n in v for n in K[112])))))) if ((not isinstance(v, dict) or ((K[86] not in v or ((isinstance(v[K[86]], str) and v[K[86]] in K[110])))))) else (True)))): return False
    return True


def _n8(v):
    if not isinstance(v, dict): return False
    if K[86] not in v: return False
    p = v.get(K[86], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[114])): return False
    p = v.get(K[115], _MISSING)
    if p is not _MISSING and not ((isinstance(p, dict) or isinstance(p, str)) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[90], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[116], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[3])): return False
    p = v.get(K[117], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[3])): return False
    if not K[118].issuperset(v): return False
    if not ((((((not isinstance(v, dict) or all(n in v for n in K[120])))) if ((not isinstance(v, dict) or ((K[86] not in v or ((isinstance(v[K[86]], str) and v[K[86]] in K[119])))))) else (True))) and (((((not isinstance(v, dict) or all(n in v for n in K[106])))) if ((not isinstance(v, dict) or ((K[86] not in v or ((isinstance(v[K[86]], str) and v[K[86]] in K[105])))))) else (True))) and (((((((not isinstance(v, dict) or all(n in v for n in K[122]))) or ((not isinstance(v, dict) or all(n in v for n in K[123])))))) if ((not isinstance(v, dict) or ((K[86] not in v or ((isinstance(v[K[86]], str) and v[K[86]] in K[121])))))) else (True)))): return False
    return True


def _n9(v):
    if not isinstance(v, dict): return False
    p = v.get(K[124], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[125])): return False
    p = v.get(K[81], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[127], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or K[126](p) is not None) and (not isinstance(p, str) or len(p) <= K[83])): return False
    p = v.get(K[128], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[83])): return False
    p = v.get(K[130], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or K[129](p) is not None) and (not isinstance(p, str) or len(p) <= K[83])): return False
    p = v.get(K[131], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[83])): return False
    p = v.get(K[132], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) or _is_integer(p)) and (not _is_number(p) or not p < K[31]) and (not isinstance(p, str) or len(p) <= K[83])): return False
    if not K[133].issuperset(v): return False
    if not ((True) if ((not isinstance(v, dict) or all(n in v for n in K[134]))) else (((not isinstance(v, dict) or all(n in v for n in K[135]))))): return False
    return True


def _n10(v):
    if not isinstance(v, dict): return False
    if K[137] not in v: return False
    p = v.get(K[138], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[60])): return False
    p = v.get(K[139], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[60])): return False
    p = v.get(K[140], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[60])): return False
    p = v.get(K[137], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) or isinstance(p, dict)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[60]) and (not isinstance(p, dict) or len(p) >= K[3]) and (not isinstance(p, dict) or len(p) <= K[60]) and (not isinstance(p, dict) or all(((isinstance(i, str)) and (not isinstance(i, str) or len(i) >= K[3]) and (not isinstance(i, str) or len(i) <= K[60])) for k, i in p.items() if k not in K[43]))): return False
    p = v.get(K[142], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list) or isinstance(p, dict)) and (not isinstance(p, list) or len(p) <= K[45]) and (not isinstance(p, list) or all(((isinstance(i, str)) and (not isinstance(i, str) or len(i) >= K[3]) and (not isinstance(i, str) or len(i) <= K[60])) for i in p)) and _unique_items(p) and (not isinstance(p, dict) or len(p) <= K[45]) and (not isinstance(p, dict) or all(((not isinstance(k, str) or K[141](k) is not None)) for k in p)) and (not isinstance(p, dict) or all(((isinstance(i, str)) and (not isinstance(i, str) or len(i) >= K[3]) and (not isinstance(i, str) or len(i) <= K[60])) for k, i in p.items() if k not in K[43]))): return False
    if not K[143].issuperset(v): return False
    return True


def _n11(v):
    if not isinstance(v, dict): return False
    if not K[3] <= len(v) <= K[145]: return False
    if K[146] not in v: return False
    p = v.get(K[147], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) <= K[98])): return False
    p = v.get(K[146], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) <= K[98])): return False
    if not K[148].issuperset(v): return False
    return True


def _n12(v):
    if not isinstance(v, dict): return False
    p = v.get(K[150], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[3])): return False
    p = v.get(K[151], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[3])): return False
    p = v.get(K[76], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[31]) and (not _is_number(p) or not p > K[152])): return False
    p = v.get(K[154], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[153])): return False
    p = v.get(K[155], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or len(p) <= K[74]) and _unique_items(p) and (not isinstance(p, list) or all(((isinstance(i, str)) and (not isinstance(i, str) or len(i) >= K[3]) and (not isinstance(i, str) or len(i) <= K[60])) for i in p))): return False
    if not K[156].issuperset(v): return False
    return True


def _n6(v):
    if not isinstance(v, dict): return False
    p = v.get(K[81], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[84], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or K[82](p) is not None) and (not isinstance(p, str) or len(p) <= K[83])): return False
    p = v.get(K[85], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[3])): return False
    p = v.get(K[78], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[3]) and (not _is_number(p) or not p > K[77])): return False
    p = v.get(K[113], _MISSING)
    if p is not _MISSING and not (_n7(p)): return False
    p = v.get(K[124], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or all((_n8(i)) for i in p))): return False
    p = v.get(K[136], _MISSING)
    if p is not _MISSING and not _n9(p): return False
    p = v.get(K[144], _MISSING)
    if p is not _MISSING and not _n10(p): return False
    p = v.get(K[149], _MISSING)
    if p is not _MISSING and not _n11(p): return False
    p = v.get(K[157], _MISSING)
    if p is not _MISSING and not _n12(p): return False
    if not K[158].issuperset(v): return False
    if not ((((not isinstance(v, dict) or all(n in v for n in K[160])))) if ((not isinstance(v, dict) or all(n in v for n in K[159]))) else (((not isinstance(v, dict) or all(n in v for n in K[135]))))): return False
    return True


def _n13(v):
    if not isinstance(v, dict): return False
    if K[29] not in v: return False
    p = v.get(K[29], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[161])): return False
    p = v.get(K[162], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[163], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p < K[31])): return False
    p = v.get(K[164], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p < K[31])): return False
    p = v.get(K[165], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[166], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[14])): return False
    if not K[167].issuperset(v): return False
    if not ((((((not isinstance(v, dict) or all(n in v for n in K[169])))) if ((not isinstance(v, dict) or ((K[29] not in v or ((isinstance(v[K[29]], str) and v[K[29]] in K[168])))))) else (True)))): return False
    return True


def _n14(v):
    if not isinstance(v, dict): return False
    if not K[3] <= len(v) <= K[145]: return False
    p = v.get(K[171], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[172], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[173], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[174], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[175], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[176], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    if not K[177].issuperset(v): return False
    return True


def _n15(v):
    if not isinstance(v, dict): return False
    p = v.get(K[179], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[181], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or K[180](p) is not None) and (not isinstance(p, str) or len(p) <= K[83])): return False
    if not K[182].issuperset(v): return False
    return True


def _n18(v):
    if not isinstance(v, dict): return False
    if not K[3] <= len(v) <= K[145]: return False
    p = v.get(K[202], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[203], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[204], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[205], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[206], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[207], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[208], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[209], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[210], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[211], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[212], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[213], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[214], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p < K[31]) and (not _is_number(p) or not p > K[3])): return False
    if not K[215].issuperset(v): return False
    if not (((not isinstance(v, dict) or all(n in v for n in K[216]))) or ((not isinstance(v, dict) or all(n in v for n in K[217]))) or ((not isinstance(v, dict) or all(n in v for n in K[218]))) or ((not isinstance(v, dict) or all(n in v for n in K[219]))) or ((not isinstance(v, dict) or all(n in v for n in K[220]))) or ((not isinstance(v, dict) or all(n in v for n in K[221]))) or ((not isinstance(v, dict) or all(n in v for n in K[222]))) or ((not isinstance(v, dict) or all(n in v for n in K[223]))) or ((not isinstance(v, dict) or all(n in v for n in K[224]))) or ((not isinstance(v, dict) or all(n in v for n in K[225]))) or ((not isinstance(v, dict) or all(n in v for n in K[226]))) or ((not isinstance(v, dict) or all(n in v for n in K[227])))): return False
    return True


def _n17(v):
    if not isinstance(v, dict): return False
    if K[192] not in v: return False
    if K[193] not in v: return False
    if K[194] not in v: return False
    p = v.get(K[192], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[193], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[195], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[3]) and (not _is_number(p) or not p > K[74])): return False
    p = v.get(K[197], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[196]) and (not _is_number(p) or not p > K[39])): return False
    p = v.get(K[199], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31]) and (not _is_number(p) or not p > K[198])): return False
    p = v.get(K[201], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[31]) and (not _is_number(p) or not p > K[200])): return False
    p = v.get(K[194], _MISSING)
    if p is not _MISSING and not _n18(p): return False
    if not K[228].issuperset(v): return False
    return True


def _n16(v):
    if not isinstance(v, dict): return False
    p = v.get(K[30], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[3]) and (not _is_number(p) or not p > K[4])): return False
    p = v.get(K[184], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[186], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[185])): return False
    p = v.get(K[187], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[188], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[189], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[3])): return False
    p = v.get(K[190], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[191], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[31])): return False
    p = v.get(K[76], _MISSING)
    if p is not _MISSING and not ((_is_integer(p))): return False
    p = v.get(K[229], _MISSING)
    if p is not _MISSING and not _n17(p): return False
    if not K[230].issuperset(v): return False
    if not ((((((not isinstance(v, dict) or ((K[186] not in v or ((isinstance(v[K[186]], str) and v[K[186]] in K[232]))))) and (not isinstance(v, dict) or all(n in v for n in K[233])))) if ((not isinstance(v, dict) or all(n in v for n in K[231]))) else (True)))): return False
    return True


def _n19(v):
    if not isinstance(v, dict): return False
    p = v.get(K[147], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[235])): return False
    p = v.get(K[236], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[189], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[237]) and (not _is_number(p) or not p > K[238])): return False
    if not K[239].issuperset(v): return False
    return True


def _n21(v):
    if not isinstance(v, dict): return False
    p = v.get(K[23], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[24], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[250])): return False
    p = v.get(K[27], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[83])): return False
    p = v.get(K[251], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[15], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[3]) and (not _is_number(p) or not p > K[8])): return False
    p = v.get(K[16], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[3]) and (not _is_number(p) or not p > K[4])): return False
    p = v.get(K[32], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31]) and (not _is_number(p) or not p > K[198])): return False
    if not K[252].issuperset(v): return False
    return True


def _n20(v):
    if not isinstance(v, dict): return False
    p = v.get(K[29], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[241])): return False
    p = v.get(K[243], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p < K[242]) and (not _is_number(p) or not p > K[3])): return False
    p = v.get(K[244], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or all(((_is_number(i)) and (not _is_number(i) or not i < K[242]) and (not _is_number(i) or not i > K[3])) for i in p)) and (not isinstance(p, list) or len(p) >= K[3]) and (not isinstance(p, list) or len(p) <= K[77])): return False
    p = v.get(K[245], _MISSING)
    if p is not _MISSING and not ((_is_number(p) or p is None) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[246], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p < K[31])): return False
    p = v.get(K[247], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[83])): return False
    p = v.get(K[248], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[83])): return False
    p = v.get(K[249], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p < K[31])): return False
    p = v.get(K[253], _MISSING)
    if p is not _MISSING and not _n21(p): return False
    if not K[254].issuperset(v): return False
    return True


def _n22(v):
    if not isinstance(v, dict): return False
    p = v.get(K[81], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[245], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    if not K[256].issuperset(v): return False
    return True


def _n23(v):
    if not isinstance(v, dict): return False
    if K[258] not in v: return False
    p = v.get(K[258], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[259])): return False
    p = v.get(K[260], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[3]) and (not _is_number(p) or not p > K[4])): return False
    p = v.get(K[262], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[4]) and (not isinstance(p, str) or K[261](p) is not None)): return False
    p = v.get(K[263], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[264], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p < K[31])): return False
    if not K[265].issuperset(v): return False
    return True


def _n25(v):
    if not (isinstance(v, str) and v in K[7]): return False
    return True


def _n26(v):
    if not (isinstance(v, str)): return False
    if not (not isinstance(v, str) or len(v) >= K[3]): return False
    if not (not isinstance(v, str) or len(v) <= K[8]): return False
    return True


def _n27(v):
    if not (isinstance(v, str) or v is None): return False
    if not (not isinstance(v, str) or len(v) <= K[4]): return False
    return True


def _n28(v):
    if not (isinstance(v, str) and v in K[12]): return False
    return True


def _n29(v):
    if not (_is_integer(v)): return False
    if not (not _is_number(v) or not v < K[3]): return False
    if not (not _is_number(v) or not v > K[14]): return False
    return True


def _n30(v):
    if not (_is_integer(v)): return False
    if not (not _is_number(v) or not v < K[3]): return False
    if not (not _is_number(v) or not v > K[4]): return False
    return True


def _n31(v):
    if not (isinstance(v, str) and v in K[18]): return False
    return True


def _n32(v):
    if not (isinstance(v, str)): return False
    if not (not isinstance(v, str) or len(v) >= K[3]): return False
    if not (not isinstance(v, str) or len(v) <= K[4]): return False
    return True


def _n33(v):
    if not (isinstance(v, str)): return False
    if not (not isinstance(v, str) or K[266](v) is not None): return False
    if not (not isinstance(v, str) or len(v) <= K[22]): return False
    return True


def _n34(v):
    if not (isinstance(v, str)): return False
    if not (not isinstance(v, str) or len(v) >= K[3]): return False
    if not (not isinstance(v, str) or len(v) <= K[14]): return False
    return True


def _n35(v):
    if not (isinstance(v, str)): return False
    if not (not isinstance(v, str) or K[267](v) is not None): return False
    if not (not isinstance(v, str) or len(v) <= K[26]): return False
    return True


def _n36(v):
    if not (isinstance(v, str) and v in K[55]): return False
    return True


def _n37(v):
    if not (_is_integer(v)): return False
    if not (not _is_number(v) or not v < K[3]): return False
    if not (not _is_number(v) or not v > K[4]): return False
    return True


def _n38(v):
    if not (_is_number(v)): return False
    if not (not _is_number(v) or not v <= K[31]): return False
    return True


def _n39(v):
    if not (_is_number(v)): return False
    if not (not _is_number(v) or not v <= K[31]): return False
    return True


def _n40(v):
    if not (_is_number(v)): return False
    if not (not _is_number(v) or not v <= K[31]): return False
    return True


def _n41(v):
    if not (_is_integer(v)): return False
    if not (not _is_number(v) or not v < K[31]): return False
    if not (not _is_number(v) or not v > K[35]): return False
    return True


def _n42(v):
    if not (_is_integer(v)): return False
    if not (not _is_number(v) or not v < K[8]): return False
    return True


def _n43(v):
    if not (_is_integer(v)): return False
    if not (not _is_number(v) or not v < K[3]): return False
    return True


def _n44(v):
    if not (isinstance(v, list)): return False
    if not (not isinstance(v, list) or all(((isinstance(i, str)) and (not isinstance(i, str) or len(i) >= K[3]) and (not isinstance(i, str) or len(i) <= K[42])) for i in v)): return False
    if not (not isinstance(v, list) or len(v) <= K[45]): return False
    if not _unique_items(v): return False
    return True


def _n45(v):
    if not isinstance(v, dict): return False
    p = v.get(K[163], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p < K[31])): return False
    p = v.get(K[164], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p < K[31])): return False
    if not K[274].issuperset(v): return False
    return True


def _n47(v):
    if not isinstance(v, dict): return False
    if K[99] not in v: return False
    p = v.get(K[99], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[98])): return False
    p = v.get(K[101], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[100]) and (not _is_number(p) or not p > K[77])): return False
    p = v.get(K[102], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[3]) and (not _is_number(p) or not p > K[77])): return False
    p = v.get(K[103], _MISSING)
    if p is not _MISSING and not ((isinstance(p, bool))): return False
    if not K[276].issuperset(v): return False
    return True


def _n46(v):
    if not isinstance(v, dict): return False
    if not K[31] <= len(v) <= K[77]: return False
    for k, p in v.items():
        if k not in K[43] and not (_n47(p)): return False
    for p in v:
        if not ((not isinstance(p, str) or K[277](p) is not None)): return False
    return True


def _n48(v):
    if not (isinstance(v, str)): return False
    if not (not isinstance(v, str) or len(v) >= K[3]): return False
    if not (not isinstance(v, str) or len(v) <= K[4]): return False
    return True


def _n24(v):
    if not isinstance(v, dict): return False
    p = v.get(K[6], _MISSING)
    if p is not _MISSING and not (_n25(p)): return False
    p = v.get(K[9], _MISSING)
    if p is not _MISSING and not (_n26(p)): return False
    p = v.get(K[10], _MISSING)
    if p is not _MISSING and not (_n27(p)): return False
    p = v.get(K[13], _MISSING)
    if p is not _MISSING and not (_n28(p)): return False
    p = v.get(K[15], _MISSING)
    if p is not _MISSING and not (_n29(p)): return False
    p = v.get(K[16], _MISSING)
    if p is not _MISSING and not (_n30(p)): return False
    p = v.get(K[19], _MISSING)
    if p is not _MISSING and not (_n31(p)): return False
    p = v.get(K[20], _MISSING)
    if p is not _MISSING and not (_n32(p)): return False
    p = v.get(K[23], _MISSING)
    if p is not _MISSING and not (_n33(p)): return False
    p = v.get(K[24], _MISSING)
    if p is not _MISSING and not (_n34(p)): return False
    p = v.get(K[27], _MISSING)
    if p is not _MISSING and not (_n35(p)): return False
    p = v.get(K[56], _MISSING)
    if p is not _MISSING and not (_n36(p)): return False
    p = v.get(K[30], _MISSING)
    if p is not _MISSING and not (_n37(p)): return False
    p = v.get(K[32], _MISSING)
    if p is not _MISSING and not (_n38(p)): return False
    p = v.get(K[33], _MISSING)
    if p is not _MISSING and not (_n39(p)): return False
    p = v.get(K[34], _MISSING)
    if p is not _MISSING and not (_n40(p)): return False
    p = v.get(K[36], _MISSING)
    if p is not _MISSING and not (_n41(p)): return False
    p = v.get(K[37], _MISSING)
    if p is not _MISSING and not (_n42(p)): return False
    p = v.get(K[38], _MISSING)
    if p is not _MISSING and not (_n43(p)): return False
    p = v.get(K[44], _MISSING)
    if p is not _MISSING and not (_n2(p)): return False
    p = v.get(K[52], _MISSING)
    if p is not _MISSING and not (_n3(p)): return False
    p = v.get(K[53], _MISSING)
    if p is not _MISSING and not (_n44(p)): return False
    p = v.get(K[72], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p < K[31]) and (not _is_number(p) or not p > K[100])): return False
    p = v.get(K[117], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[74]) and (not _is_number(p) or not p > K[47])): return False
    p = v.get(K[269], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[268])): return False
    p = v.get(K[139], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[271], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[77]) and (not _is_number(p) or not p > K[270])): return False
    p = v.get(K[273], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[272])): return False
    p = v.get(K[257], _MISSING)
    if p is not _MISSING and not ((isinstance(p, bool))): return False
    p = v.get(K[275], _MISSING)
    if p is not _MISSING and not _n45(p): return False
    p = v.get(K[278], _MISSING)
    if p is not _MISSING and not _n46(p): return False
    p = v.get(K[54], _MISSING)
    if p is not _MISSING and not (_n48(p)): return False
    p = v.get(K[147], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[98])): return False
    p = v.get(K[279], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[4])): return False
    if not K[280].issuperset(v): return False
    return True


def _n51(v):
    if not isinstance(v, dict): return False
    if not K[31] <= len(v) <= K[83]: return False
    for k, p in v.items():
        if k not in K[43] and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) <= K[4])): return False
    return True


def _n52(v):
    if not isinstance(v, dict): return False
    p = v.get(K[163], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p < K[31])): return False
    p = v.get(K[164], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p < K[31])): return False
    if not K[274].issuperset(v): return False
    return True


def _n50(v):
    if not isinstance(v, dict): return False
    p = v.get(K[6], _MISSING)
    if p is not _MISSING and not (_n25(p)): return False
    p = v.get(K[9], _MISSING)
    if p is not _MISSING and not (_n26(p)): return False
    p = v.get(K[10], _MISSING)
    if p is not _MISSING and not (_n27(p)): return False
    p = v.get(K[13], _MISSING)
    if p is not _MISSING and not (_n28(p)): return False
    p = v.get(K[15], _MISSING)
    if p is not _MISSING and not (_n29(p)): return False
    p = v.get(K[16], _MISSING)
    if p is not _MISSING and not (_n30(p)): return False
    p = v.get(K[19], _MISSING)
    if p is not _MISSING and not (_n31(p)): return False
    p = v.get(K[23], _MISSING)
    if p is not _MISSING and not (_n33(p)): return False
    p = v.get(K[24], _MISSING)
    if p is not _MISSING and not (_n34(p)): return False
    p = v.get(K[27], _MISSING)
    if p is not _MISSING and not (_n35(p)): return False
    p = v.get(K[20], _MISSING)
    if p is not _MISSING and not (_n32(p)): return False
    p = v.get(K[30], _MISSING)
    if p is not _MISSING and not (_n37(p)): return False
    p = v.get(K[32], _MISSING)
    if p is not _MISSING and not (_n38(p)): return False
    p = v.get(K[34], _MISSING)
    if p is not _MISSING and not (_n40(p)): return False
    p = v.get(K[36], _MISSING)
    if p is not _MISSING and not (_n41(p)): return False
    p = v.get(K[44], _MISSING)
    if p is not _MISSING and not (_n2(p)): return False
    p = v.get(K[52], _MISSING)
    if p is not _MISSING and not (_n3(p)): return False
    p = v.get(K[53], _MISSING)
    if p is not _MISSING and not (_n44(p)): return False
    p = v.get(K[37], _MISSING)
    if p is not _MISSING and not (_n42(p)): return False
    p = v.get(K[38], _MISSING)
    if p is not _MISSING and not (_n43(p)): return False
    p = v.get(K[124], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[282])): return False
    p = v.get(K[283], _MISSING)
    if p is not _MISSING and not _n51(p): return False
    p = v.get(K[284], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or len(p) >= K[3]) and (not isinstance(p, list) or len(p) <= K[83]) and _unique_items(p) and (not isinstance(p, list) or all(((isinstance(i, str)) and (not isinstance(i, str) or len(i) >= K[3]) and (not isinstance(i, str) or len(i) <= K[83])) for i in p))): return False
    p = v.get(K[139], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[117], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[3]) and (not _is_number(p) or not p > K[4])): return False
    p = v.get(K[72], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p < K[31])): return False
    p = v.get(K[257], _MISSING)
    if p is not _MISSING and not ((isinstance(p, bool))): return False
    p = v.get(K[275], _MISSING)
    if p is not _MISSING and not _n52(p): return False
    if not K[285].issuperset(v): return False
    return True


def _n49(v):
    if not isinstance(v, dict): return False
    if not K[31] <= len(v) <= K[35]: return False
    for k, p in v.items():
        if k not in K[43] and not _n50(p): return False
    for p in v:
        if not ((not isinstance(p, str) or K[286](p) is not None) and (not isinstance(p, str) or len(p) <= K[77])): return False
    return True


def _n54(v):
    if not isinstance(v, dict): return False
    if not K[3] <= len(v) <= K[145]: return False
    for k, p in v.items():
        if k not in K[43] and not ((isinstance(p, str) or _is_number(p) or isinstance(p, bool))): return False
    return True


def _n53(v):
    if not isinstance(v, dict): return False
    if K[288] not in v: return False
    p = v.get(K[288], _MISSING)
    if p is not _MISSING and not _n54(p): return False
    p = v.get(K[289], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or len(p) >= K[3]) and (not isinstance(p, list) or all(((isinstance(i, str)) and (not isinstance(i, str) or len(i) >= K[3]) and (not isinstance(i, str) or len(i) <= K[77])) for i in p))): return False
    p = v.get(K[290], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or all(((isinstance(i, str)) and (not isinstance(i, str) or len(i) >= K[3]) and (not isinstance(i, str) or len(i) <= K[4])) for i in p))): return False
    if not K[291].issuperset(v): return False
    return True


def _n55(v):
    if not isinstance(v, dict): return False
    if K[293] not in v: return False
    p = v.get(K[293], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3])): return False
    p = v.get(K[9], _MISSING)
    if p is not _MISSING and not (_n1(p)): return False
    p = v.get(K[71], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[3]) and (not _is_number(p) or not p > K[4])): return False
    p = v.get(K[294], _MISSING)
    if p is not _MISSING and not ((isinstance(p, bool))): return False
    p = v.get(K[295], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3])): return False
    p = v.get(K[296], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[200]) and (not _is_number(p) or not p > K[238])): return False
    if not K[297].issuperset(v): return False
    return True


def _n57(v):
    if not isinstance(v, dict): return False
    p = v.get(K[308], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[307])): return False
    p = v.get(K[59], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[309], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[3]) and (not _is_number(p) or not p > K[45])): return False
    if not K[310].issuperset(v): return False
    return True


def _n56(v):
    if not isinstance(v, dict): return False
    if K[84] not in v: return False
    if K[300] not in v: return False
    p = v.get(K[84], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[45])): return False
    p = v.get(K[300], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[301])): return False
    p = v.get(K[9], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[10], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) or p is None) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[303], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[302])): return False
    p = v.get(K[305], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[304])): return False
    p = v.get(K[306], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[311], _MISSING)
    if p is not _MISSING and not _n57(p): return False
    p = v.get(K[23], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[24], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[14])): return False
    p = v.get(K[312], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[3]) and (not _is_number(p) or not p > K[8])): return False
    p = v.get(K[15], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[3]) and (not _is_number(p) or not p > K[8])): return False
    p = v.get(K[162], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p < K[31])): return False
    if not K[313].issuperset(v): return False
    return True


def _n58(v):
    if not isinstance(v, dict): return False
    p = v.get(K[315], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p < K[31]) and (not _is_number(p) or not p > K[3])): return False
    p = v.get(K[316], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p < K[31]) and (not _is_number(p) or not p > K[3])): return False
    if not K[317].issuperset(v): return False
    return True


def _n0(v):
    if not isinstance(v, dict): return False
    if K[0] not in v: return False
    if K[1] not in v: return False
    if K[2] not in v: return False
    p = v.get(K[5], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[0], _MISSING)
    if p is not _MISSING and not _n1(p): return False
    p = v.get(K[80], _MISSING)
    if p is not _MISSING and not _n5(p): return False
    p = v.get(K[1], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or len(p) >= K[3]) and (not isinstance(p, list) or all(_n6(i) for i in p)) and (not isinstance(p, list) or len(p) <= K[60])): return False
    p = v.get(K[2], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[170], _MISSING)
    if p is not _MISSING and not _n13(p): return False
    p = v.get(K[178], _MISSING)
    if p is not _MISSING and not _n14(p): return False
    p = v.get(K[183], _MISSING)
    if p is not _MISSING and not _n15(p): return False
    p = v.get(K[76], _MISSING)
    if p is not _MISSING and not ((_is_integer(p))): return False
    p = v.get(K[234], _MISSING)
    if p is not _MISSING and not _n16(p): return False
    p = v.get(K[240], _MISSING)
    if p is not _MISSING and not _n19(p): return False
    p = v.get(K[255], _MISSING)
    if p is not _MISSING and not _n20(p): return False
    p = v.get(K[257], _MISSING)
    if p is not _MISSING and not _n22(p): return False
    p = v.get(K[101], _MISSING)
    if p is not _MISSING and not _n23(p): return False
    p = v.get(K[281], _MISSING)
    if p is not _MISSING and not _n24(p): return False
    p = v.get(K[287], _MISSING)
    if p is not _MISSING and not _n49(p): return False
    p = v.get(K[292], _MISSING)
    if p is not _MISSING and not _n53(p): return False
    p = v.get(K[298], _MISSING)
    if p is not _MISSING and not _n55(p): return False
    p = v.get(K[314], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or len(p) >= K[100]) and (not isinstance(p, list) or len(p) <= K[299]) and (not isinstance(p, list) or all(_n56(i) for i in p))): return False
    p = v.get(K[318], _MISSING)
    if p is not _MISSING and not _n58(p): return False
    if not K[319].issuperset(v): return False
    return True


def _n62(v):
    if not isinstance(v, dict): return False
    if K[84] not in v: return False
    if K[326] not in v: return False
    p = v.get(K[84], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) <= K[83])): return False
    p = v.get(K[326], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) <= K[327])): return False
    if not K[328].issuperset(v): return False
    return True


def _n61(v):
    if not isinstance(v, dict): return False
    if K[138] not in v: return False
    if K[86] not in v: return False
    if K[324] not in v: return False
    p = v.get(K[138], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) <= K[83])): return False
    p = v.get(K[86], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[325])): return False
    p = v.get(K[324], _MISSING)
    if p is not _MISSING and not _n62(p): return False
    if not K[329].issuperset(v): return False
    return True


def _n60(v):
    if not isinstance(v, dict): return False
    if K[321] not in v: return False
    p = v.get(K[321], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[322])): return False
    p = v.get(K[323], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) or p is None) and (not isinstance(p, str) or len(p) <= K[270])): return False
    p = v.get(K[330], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or len(p) <= K[26]) and (not isinstance(p, list) or all((_n61(i)) for i in p))): return False
    p = v.get(K[331], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) <= K[83])): return False
    p = v.get(K[84], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) <= K[83])): return False
    if not K[332].issuperset(v): return False
    if not ((((((not isinstance(v, dict) or all(n in v for n in K[333])) and (not isinstance(v, dict) or ((K[323] not in v or ((isinstance(v[K[323]], str)))))))) if ((not isinstance(v, dict) or ((K[321] not in v or ((isinstance(v[K[321]], str) and v[K[321]] in K[148])))))) else (True))) and (((((not isinstance(v, dict) or all(n in v for n in K[333])) and (not isinstance(v, dict) or ((K[323] not in v or ((isinstance(v[K[323]], str)))))))) if ((not isinstance(v, dict) or ((K[321] not in v or ((isinstance(v[K[321]], str) and v[K[321]] in K[334])))))) else (True))) and (((((((not isinstance(v, dict) or all(n in v for n in K[333])) and (not isinstance(v, dict) or ((K[323] not in v or ((isinstance(v[K[323]], str))))))) or ((not isinstance(v, dict) or all(n in v for n in K[336])))))) if ((not isinstance(v, dict) or ((K[321] not in v or ((isinstance(v[K[321]], str) and v[K[321]] in K[335])))))) else (True))) and (((((not ((not isinstance(v, dict) or all(n in v for n in K[336])))))) if ((not isinstance(v, dict) or ((K[321] not in v or ((not ((isinstance(v[K[321]], str) and v[K[321]] in K[335])))))))) else (True)))): return False
    return True


def _n63(v):
    if not isinstance(v, dict): return False
    if not K[31] <= len(v) <= K[45]: return False
    for k, p in v.items():
        if k not in K[43] and not ((isinstance(p, str) or _is_number(p) or isinstance(p, bool)) and (not isinstance(p, str) or len(p) <= K[60])): return False
    for p in v:
        if not ((not isinstance(p, str) or K[337](p) is not None)): return False
    return True


def _n66(v):
    if not isinstance(v, dict): return False
    return True


def _n65(v):
    if not isinstance(v, dict): return False
    if K[84] not in v: return False
    p = v.get(K[84], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or K[338](p) is not None)): return False
    p = v.get(K[339], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) <= K[98])): return False
    p = v.get(K[340], _MISSING)
    if p is not _MISSING and not _n66(p): return False
    p = v.get(K[341], _MISSING)
    if p is not _MISSING and not ((isinstance(p, bool))): return False
    if not K[342].issuperset(v): return False
    return True


def _n64(v):
    if not isinstance(v, dict): return False
    if K[86] not in v: return False
    if K[324] not in v: return False
    p = v.get(K[86], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[325])): return False
    p = v.get(K[324], _MISSING)
    if p is not _MISSING and not _n65(p): return False
    if not K[343].issuperset(v): return False
    return True


def _n68(v):
    if not isinstance(v, dict): return False
    if K[84] not in v: return False
    p = v.get(K[84], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) <= K[83])): return False
    if not K[347].issuperset(v): return False
    return True


def _n67(v):
    if not isinstance(v, dict): return False
    if K[86] not in v: return False
    if K[324] not in v: return False
    p = v.get(K[86], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[325])): return False
    p = v.get(K[324], _MISSING)
    if p is not _MISSING and not _n68(p): return False
    if not K[343].issuperset(v): return False
    return True


def _n71(v):
    if not isinstance(v, dict): return False
    if not K[31] <= len(v) <= K[42]: return False
    for k, p in v.items():
        if k not in K[43] and not ((isinstance(p, list)) and (not isinstance(p, list) or len(p) >= K[3]) and (not isinstance(p, list) or len(p) <= K[42])): return False
    return True


def _n70(v):
    if not isinstance(v, dict): return False
    if K[84] not in v: return False
    p = v.get(K[84], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) <= K[83])): return False
    p = v.get(K[326], _MISSING)
    if p is not _MISSING and not _n71(p): return False
    p = v.get(K[351], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or len(p) <= K[42]) and (not isinstance(p, list) or all(((isinstance(i, str)) and (not isinstance(i, str) or len(i) <= K[83])) for i in p))): return False
    if not K[352].issuperset(v): return False
    return True


def _n69(v):
    if not isinstance(v, dict): return False
    if K[349] not in v: return False
    p = v.get(K[349], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[350])): return False
    p = v.get(K[353], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or len(p) <= K[45]) and (not isinstance(p, list) or all((_n70(i)) for i in p))): return False
    p = v.get(K[355], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[354])): return False
    p = v.get(K[356], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or len(p) <= K[45]) and (not isinstance(p, list) or all(((isinstance(i, str)) and (not isinstance(i, str) or len(i) <= K[327])) for i in p))): return False
    p = v.get(K[357], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or len(p) <= K[26]) and (not isinstance(p, list) or all(((isinstance(i, str)) and (not isinstance(i, str) or len(i) <= K[83])) for i in p))): return False
    if not K[358].issuperset(v): return False
    return True


def _n59(v):
    if not isinstance(v, dict): return False
    if K[138] not in v: return False
    p = v.get(K[138], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or K[320](p) is not None)): return False
    p = v.get(K[140], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or len(p) >= K[3]) and (not isinstance(p, list) or len(p) <= K[238]) and (not isinstance(p, list) or all(_n60(i) for i in p))): return False
    p = v.get(K[139], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) <= K[270])): return False
    p = v.get(K[142], _MISSING)
    if p is not _MISSING and not _n63(p): return False
    p = v.get(K[113], _MISSING)
    if p is not _MISSING and not (_n7(p)): return False
    p = v.get(K[124], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or len(p) <= K[77]) and (not isinstance(p, list) or all((_n8(i)) for i in p))): return False
    p = v.get(K[344], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or len(p) >= K[3]) and (not isinstance(p, list) or len(p) <= K[26]) and (not isinstance(p, list) or all((_n64(i)) for i in p))): return False
    p = v.get(K[345], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[60])): return False
    p = v.get(K[348], _MISSING)
    if p is not _MISSING and not ((((isinstance(p, str) and p in K[346])) or _n67(p))): return False
    p = v.get(K[359], _MISSING)
    if p is not _MISSING and not (_n69(p)): return False
    p = v.get(K[360], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or len(p) >= K[3]) and (not isinstance(p, list) or len(p) <= K[299]) and (not isinstance(p, list) or all((_n69(i)) for i in p))): return False
    if not K[361].issuperset(v): return False
    if not ((((not isinstance(v, dict) or all(n in v for n in K[362])) and (not ((not isinstance(v, dict) or all(n in v for n in K[363])))))) + (((not isinstance(v, dict) or all(n in v for n in K[363])) and (not ((not isinstance(v, dict) or all(n in v for n in K[362])))))) == 1): return False
    if not (((((not isinstance(v, dict) or all(n in v for n in K[364]))) or ((not isinstance(v, dict) or all(n in v for n in K[365]))) or ((not isinstance(v, dict) or all(n in v for n in K[366]))))) and ((not ((not isinstance(v, dict) or all(n in v for n in K[367]))))) and ((not ((not isinstance(v, dict) or all(n in v for n in K[368])))))): return False
    return True


def _n74(v):
    if not isinstance(v, dict): return False
    if not K[3] <= len(v) <= K[145]: return False
    for k, p in v.items():
        if k not in K[43] and not ((isinstance(p, str) or _is_number(p) or isinstance(p, bool)) and (not isinstance(p, str) or len(p) <= K[4])): return False
    return True


def _n73(v):
    if not isinstance(v, dict): return False
    if K[369] not in v: return False
    if K[370] not in v: return False
    if K[243] not in v: return False
    p = v.get(K[84], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[83])): return False
    p = v.get(K[369], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[370], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[371])): return False
    p = v.get(K[243], _MISSING)
    if p is not _MISSING and not ((_is_number(p))): return False
    p = v.get(K[372], _MISSING)
    if p is not _MISSING and not _n74(p): return False
    p = v.get(K[373], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[3])): return False
    p = v.get(K[375], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[374]) and (not _is_number(p) or not p >= K[3])): return False
    p = v.get(K[377], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[376])): return False
    p = v.get(K[378], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[77])): return False
    if not K[379].issuperset(v): return False
    return True


def _n76(v):
    if not isinstance(v, dict): return False
    if K[380] not in v: return False
    p = v.get(K[380], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[339], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[381], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or len(p) >= K[3]) and (not isinstance(p, list) or all(((isinstance(i, str)) and (not isinstance(i, str) or len(i) <= K[4])) for i in p))): return False
    p = v.get(K[382], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or len(p) >= K[3]) and (not isinstance(p, list) or all(((isinstance(i, str)) and (not isinstance(i, str) or len(i) >= K[3]) and (not isinstance(i, str) or len(i) <= K[4])) for i in p))): return False
    p = v.get(K[308], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[383])): return False
    p = v.get(K[384], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[77])): return False
    p = v.get(K[385], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or len(p) >= K[3]) and (not isinstance(p, list) or len(p) <= K[83]) and (not isinstance(p, list) or all(((isinstance(i, str)) and (not isinstance(i, str) or len(i) >= K[3]) and (not isinstance(i, str) or len(i) <= K[77])) for i in p))): return False
    if not K[386].issuperset(v): return False
    if not (((not isinstance(v, dict) or all(n in v for n in K[387]))) or ((not isinstance(v, dict) or all(n in v for n in K[388]))) or ((not isinstance(v, dict) or all(n in v for n in K[389])))): return False
    return True


def _n75(v):
    if not (isinstance(v, list)): return False
    if not (not isinstance(v, list) or all(_n76(i) for i in v)): return False
    return True


def _n78(v):
    if not isinstance(v, dict): return False
    for k, p in v.items():
        if k not in K[43] and not ((isinstance(p, str) or _is_number(p) or isinstance(p, bool)) and (not isinstance(p, str) or len(p) <= K[4])): return False
    return True


def _n77(v):
    if not isinstance(v, dict): return False
    if K[84] not in v: return False
    if K[391] not in v: return False
    p = v.get(K[84], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or K[392](p) is not None) and (not isinstance(p, str) or len(p) <= K[83])): return False
    p = v.get(K[391], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[393], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[372], _MISSING)
    if p is not _MISSING and not _n78(p): return False
    if not K[394].issuperset(v): return False
    return True


def _n79(v):
    if not isinstance(v, dict): return False
    p = v.get(K[400], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or len(p) <= K[77]) and _unique_items(p) and (not isinstance(p, list) or all(((isinstance(i, str)) and (not isinstance(i, str) or len(i) >= K[3]) and (not isinstance(i, str) or len(i) <= K[14])) for i in p))): return False
    if not K[401].issuperset(v): return False
    return True


def _n81(v):
    if not isinstance(v, dict): return False
    if K[84] not in v: return False
    if K[393] not in v: return False
    p = v.get(K[84], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[83])): return False
    p = v.get(K[393], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[4]) and (not isinstance(p, str) or K[413](p) is not None)): return False
    if not K[414].issuperset(v): return False
    return True


def _n82(v):
    if not isinstance(v, dict): return False
    p = v.get(K[418], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p < K[31])): return False
    p = v.get(K[419], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p < K[31])): return False
    p = v.get(K[420], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p < K[31])): return False
    p = v.get(K[421], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p < K[31])): return False
    p = v.get(K[422], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p < K[31])): return False
    p = v.get(K[423], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p < K[31])): return False
    if not K[416].issuperset(v): return False
    return True


def _n80(v):
    if not isinstance(v, dict): return False
    p = v.get(K[406], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[408], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[77]) and (not isinstance(p, str) or K[407](p) is not None)): return False
    p = v.get(K[409], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[410], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[412], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[411])): return False
    p = v.get(K[415], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or len(p) <= K[74]) and (not isinstance(p, list) or all(_n81(i) for i in p))): return False
    p = v.get(K[375], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[374]) and (not _is_number(p) or not p >= K[3])): return False
    p = v.get(K[417], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or len(p) >= K[3]) and _unique_items(p) and (not isinstance(p, list) or all(((isinstance(i, str) and i in K[416])) for i in p))): return False
    p = v.get(K[424], _MISSING)
    if p is not _MISSING and not _n82(p): return False
    if not K[425].issuperset(v): return False
    return True


def _n84(v):
    if not isinstance(v, dict): return False
    if not K[3] <= len(v) <= K[145]: return False
    for k, p in v.items():
        if k not in K[43] and not ((isinstance(p, str) or _is_number(p) or isinstance(p, bool)) and (not isinstance(p, str) or len(p) <= K[4])): return False
    return True


def _n85(v):
    if not isinstance(v, dict): return False
    if K[84] not in v: return False
    if K[393] not in v: return False
    p = v.get(K[84], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[83])): return False
    p = v.get(K[393], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[4]) and (not isinstance(p, str) or K[433](p) is not None)): return False
    if not K[414].issuperset(v): return False
    return True


def _n88(v):
    if not isinstance(v, dict): return False
    if not K[3] <= len(v) <= K[145]: return False
    for k, p in v.items():
        if k not in K[43] and not ((isinstance(p, str) or _is_number(p) or isinstance(p, bool)) and (not isinstance(p, str) or len(p) <= K[4])): return False
    return True


def _n87(v):
    if not isinstance(v, dict): return False
    if K[372] not in v: return False
    if K[150] not in v: return False
    p = v.get(K[372], _MISSING)
    if p is not _MISSING and not _n88(p): return False
    p = v.get(K[150], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[3])): return False
    if not K[441].issuperset(v): return False
    return True


def _n89(v):
    if not isinstance(v, dict): return False
    p = v.get(K[443], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[444], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[445], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[446], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    p = v.get(K[447], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31])): return False
    if not K[448].issuperset(v): return False
    return True


def _n86(v):
    if not isinstance(v, dict): return False
    p = v.get(K[76], _MISSING)
    if p is not _MISSING and not ((_is_integer(p))): return False
    p = v.get(K[439], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or all(((isinstance(i, str)) and (not isinstance(i, str) or len(i) >= K[3]) and (not isinstance(i, str) or len(i) <= K[4])) for i in p))): return False
    p = v.get(K[440], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[31])): return False
    p = v.get(K[442], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or all(_n87(i) for i in p))): return False
    p = v.get(K[449], _MISSING)
    if p is not _MISSING and not _n89(p): return False
    p = v.get(K[450], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p < K[31]) and (not _is_number(p) or not p > K[3])): return False
    if not K[451].issuperset(v): return False
    return True


def _n83(v):
    if not isinstance(v, dict): return False
    p = v.get(K[426], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or all(((isinstance(i, str)) and (not isinstance(i, str) or len(i) >= K[3]) and (not isinstance(i, str) or len(i) <= K[4])) for i in p))): return False
    p = v.get(K[427], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[4])): return False
    p = v.get(K[428], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or all(_n84(i) for i in p))): return False
    p = v.get(K[429], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[3])): return False
    p = v.get(K[430], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p < K[31]) and (not _is_number(p) or not p > K[3])): return False
    p = v.get(K[375], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[374]) and (not _is_number(p) or not p >= K[3])): return False
    p = v.get(K[431], _MISSING)
    if p is not _MISSING and not ((isinstance(p, bool))): return False
    p = v.get(K[432], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[3]) and (not _is_number(p) or not p > K[100])): return False
    p = v.get(K[434], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or len(p) <= K[77]) and (not isinstance(p, list) or all(_n85(i) for i in p))): return False
    p = v.get(K[436], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31]) and (not _is_number(p) or not p > K[435])): return False
    p = v.get(K[438], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[437])): return False
    p = v.get(K[157], _MISSING)
    if p is not _MISSING and not _n86(p): return False
    if not K[452].issuperset(v): return False
    return True


def _n90(v):
    if not isinstance(v, dict): return False
    p = v.get(K[454], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p < K[31]) and (not _is_number(p) or not p > K[3])): return False
    p = v.get(K[455], _MISSING)
    if p is not _MISSING and not ((_is_integer(p)) and (not _is_number(p) or not p < K[3])): return False
    p = v.get(K[456], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p < K[242]) and (not _is_number(p) or not p > K[3])): return False
    p = v.get(K[375], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[374]) and (not _is_number(p) or not p >= K[3])): return False
    p = v.get(K[457], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p < K[31]) and (not _is_number(p) or not p > K[3])): return False
    if not K[458].issuperset(v): return False
    return True


def _n72(v):
    if not isinstance(v, dict): return False
    if K[278] not in v: return False
    p = v.get(K[84], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str)) and (not isinstance(p, str) or len(p) <= K[83])): return False
    p = v.get(K[278], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or len(p) >= K[3]) and (not isinstance(p, list) or all(_n73(i) for i in p)) and (not isinstance(p, list) or len(p) <= K[60])): return False
    p = v.get(K[390], _MISSING)
    if p is not _MISSING and not (((((isinstance(p, str)) and (not isinstance(p, str) or len(p) >= K[3]) and (not isinstance(p, str) or len(p) <= K[4]))) + ((_n75(p))) == 1)): return False
    p = v.get(K[395], _MISSING)
    if p is not _MISSING and not ((isinstance(p, list)) and (not isinstance(p, list) or all(_n77(i) for i in p))): return False
    p = v.get(K[397], _MISSING)
    if p is not _MISSING and not ((isinstance(p, str) and p in K[396])): return False
    p = v.get(K[375], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[374]) and (not _is_number(p) or not p >= K[3])): return False
    p = v.get(K[398], _MISSING)
    if p is not _MISSING and not ((isinstance(p, bool))): return False
    p = v.get(K[399], _MISSING)
    if p is not _MISSING and not ((isinstance(p, bool))): return False
    p = v.get(K[402], _MISSING)
    if p is not _MISSING and not _n79(p): return False
    p = v.get(K[403], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31]) and (not _is_number(p) or not p > K[200])): return False
    p = v.get(K[404], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p < K[31]) and (not _is_number(p) or not p > K[3])): return False
    p = v.get(K[405], _MISSING)
    if p is not _MISSING and not ((_is_number(p)) and (not _is_number(p) or not p <= K[31]) and (not _is_number(p) or not p > K[3])): return False
    p = v.get(K[279], _MISSING)
    if p is not _MISSING and not _n80(p): return False
    p = v.get(K[453], _MISSING)
    if p is not _MISSING and not _n83(p): return False
    p = v.get(K[281], _MISSING)
    if p is not _MISSING and not _n90(p): return False
    if not K[459].issuperset(v): return False
    return True


def _n91(v):
    if not isinstance(v, dict): return False
    if K[460] not in v: return False
    p = v.get(K[460], _MISSING)
    if p is not _MISSING and not (_n75(p)): return False
    if not K[461].issuperset(v): return False
    return True


CHECKS = {
    'config': lambda v: _n0(v),
    'case': lambda v: _n59(v),
    'rubric': lambda v: _n72(v),
    'forbidden': lambda v: (_n91(v)),
}
