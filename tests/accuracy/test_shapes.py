"""The served requests' shapes (accuracy/shapes.py) and the likely cause they give the per-prompt judge, on plain
rows: a shape is named only where every out-of-line request has it and in-line ones without it exist."""

import math

from llm_adapt.accuracy import shapes
from llm_adapt.accuracy.shapes import (
    ABOVE,
    ALONE,
    AS_SERVED,
    BATCHED,
    BELOW,
    COLD,
    ON,
    OTHER,
    REPEAT,
    block_class,
    chunk_count,
    length_probes,
    shape_of,
    shared_shape,
)
from llm_adapt.accuracy.verdict.endpoint import prompts_check


def test_a_length_against_the_block_size():
    assert [block_class(n, 128) for n in (127, 128, 129, 130, 255, 256, 257, 60)] == \
           [BELOW, ON, ABOVE, OTHER, BELOW, ON, ABOVE, OTHER]
    assert block_class(128, None) == OTHER and block_class(0, 16) == OTHER
    assert chunk_count(4097, 4096) == 2 and chunk_count(4096, 4096) == 1 and chunk_count(10, None) is None


def test_length_probes_cut_prompts_long_enough_in_turn():
    probes = length_probes([45, 300, 2552], 128)
    assert [n for _, n in probes] == [127, 128, 129, 255, 256, 257]
    assert {i for i, _ in probes} == {1, 2}  # taken in turn from the prompts longer than each cut
    assert all([45, 300, 2552][i] > n for i, n in probes)
    assert length_probes([45, 90], 128) == [] and length_probes([300], None) == []


def rows(spec):
    """spec: (block, chunks, batch, cache, out of line) per request."""
    return [(shapes.Shape(block=b, chunks=c, batch=bt, cache=ca), out) for b, c, bt, ca, out in spec]


def test_every_shape_is_named_where_the_out_of_line_requests_share_it():
    aligned = rows([(ON, 1, ALONE, COLD, True), (ON, 1, ALONE, COLD, True), (BELOW, 1, ALONE, COLD, False),
                    (ABOVE, 1, ALONE, COLD, False), (OTHER, 1, BATCHED, AS_SERVED, False)])
    assert shared_shape(aligned) == "shape_block_aligned"
    cached = rows([(OTHER, 1, ALONE, REPEAT, True), (OTHER, 1, ALONE, REPEAT, True), (OTHER, 1, BATCHED, AS_SERVED, False),
                   (OTHER, 1, BATCHED, AS_SERVED, False)])
    assert shared_shape(cached) == "shape_prefix_cache"
    batched = rows([(OTHER, 1, BATCHED, AS_SERVED, True), (BELOW, 1, BATCHED, AS_SERVED, True),
                    (OTHER, 1, ALONE, REPEAT, False), (ON, 1, ALONE, COLD, False)])
    assert shared_shape(batched) == "shape_batched"
    chunked = rows([(OTHER, 3, BATCHED, AS_SERVED, True), (OTHER, 2, BATCHED, AS_SERVED, True),
                    (OTHER, 1, BATCHED, AS_SERVED, False), (OTHER, 1, BATCHED, AS_SERVED, False)])
    assert shared_shape(chunked) == "shape_chunked"


def test_no_shape_is_named_from_one_request_a_clean_run_or_a_fault_on_every_shape():
    one = rows([(ON, 1, BATCHED, AS_SERVED, True), (OTHER, 1, ALONE, COLD, False), (BELOW, 1, ALONE, COLD, False)])
    assert shared_shape(one) is None  # one bad request has every shape it has
    clean = rows([(ON, 1, ALONE, COLD, False), (OTHER, 1, BATCHED, AS_SERVED, False)])
    assert shared_shape(clean) is None
    everywhere = rows([(ON, 1, ALONE, COLD, True), (OTHER, 1, BATCHED, AS_SERVED, True), (BELOW, 1, ALONE, REPEAT, True)])
    assert shared_shape(everywhere) is None
    unknown = rows([(OTHER, None, BATCHED, AS_SERVED, True), (OTHER, None, BATCHED, AS_SERVED, True),
                    (OTHER, None, BATCHED, AS_SERVED, False), (OTHER, None, BATCHED, AS_SERVED, False)])
    assert shared_shape(unknown) is None  # nothing tells them apart


def prompt(name, tokens, server, floor, shape):
    return {"id": name, "tokens": tokens, "first": 1, "last": tokens - 1, "positions": tokens - 1, "server": server,
            "floor": floor, "variant": floor * 1.05, "shape": shape}


def test_the_per_prompt_check_names_the_shared_shape_and_stays_clean_without_a_fault():
    def suite(bad_aligned: bool):
        out = [prompt(f"p{i}", 60 + i, 1.0, 1.0, shape_of(60 + i, 128, 4096, BATCHED, AS_SERVED)) for i in range(8)]
        for n in (127, 128, 129, 255, 256, 257):
            hit = bad_aligned and n % 128 == 0
            out.append(prompt(f"long[:{n}]", n, 30.0 if hit else 1.0, 1.0, shape_of(n, 128, 4096, ALONE, COLD)))
        return out

    failed = prompts_check(suite(True), allowed=1.2)
    assert failed["status"] == "fail" and set(failed["args"]["ids"]) == {"long[:128]", "long[:256]"}
    assert failed["args"]["shape"] == "shape_block_aligned"
    from llm_adapt.messages import check_text

    assert "likely cause only block-aligned lengths" in check_text("served_prompts", "value", "en", failed["args"])
    assert "仅块对齐长度" in check_text("served_prompts", "value", "zh", failed["args"])
    clean = prompts_check(suite(False), allowed=1.2)
    assert clean["status"] == "pass" and clean["args"]["shape"] is None


def test_coverage_counts_each_shape_that_ran():
    ran = shapes.coverage([shape_of(128, 128, 64, ALONE, COLD), shape_of(60, 128, 64, BATCHED, AS_SERVED),
                           shape_of(60, 128, 64, ALONE, REPEAT)])
    assert ran["on a block multiple"] == 1 and ran["several prefill chunks"] == 1 and ran["prefix-cache repeat"] == 1
    assert ran["alone"] == 2 and ran["batched"] == 1 and not math.isnan(sum(ran.values()))


def test_a_fault_on_every_fourth_request_is_not_called_a_batching_fault():
    """Hits that land on batched requests by chance (2 of 8) are not 'only in batches'."""
    spec = [(OTHER, 1, BATCHED, AS_SERVED, i in (0, 4)) for i in range(8)] + \
           [(OTHER, 1, ALONE, REPEAT, False)] * 3
    assert shared_shape(rows(spec)) is None
    every_batched = [(OTHER, 1, BATCHED, AS_SERVED, True) for _ in range(8)] + [(OTHER, 1, ALONE, REPEAT, False)] * 3
    assert shared_shape(rows(every_batched)) == "shape_batched"
