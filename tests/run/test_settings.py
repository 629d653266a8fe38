"""The differential run's settings: the words `--settings` takes, their labels and features, and the setting a
served command line shows (pure)."""

import pytest

from llm_adapt.deploy_settings import Setting, parse_setting, parse_settings, served_setting


def test_the_words_and_their_labels():
    eager, graph, tp2, ep2, both = parse_settings("eager,graph,tp2,ep2,graph+tp2")
    assert [s.label for s in (eager, graph, tp2, ep2, both)] == ["eager", "graph", "TP=2", "EP=2", "TP=2 + graph"]
    assert (ep2.tp, ep2.ep, ep2.features) == (2, True, frozenset({"tp", "ep"}))
    assert both.name == "tp2+graph" and both.mode == "graph" and eager.features == frozenset()


def test_the_schedulers_words_and_their_labels():
    chunk, off, serial, all3 = parse_settings("chunk64,noprefix,serial,serial+noprefix+chunk32+graph")
    assert (chunk.chunk, chunk.features, chunk.label) == (64, frozenset({"chunk"}), "chunk=64")
    assert (off.prefix_cache, off.features, off.label) == (False, frozenset({"noprefix"}), "prefix-cache=off")
    assert (serial.serial, serial.label, serial.mode) == (True, "serial", "eager")
    assert all3.name == "graph+chunk32+noprefix+serial" and all3.features == {"graph", "chunk", "noprefix", "serial"}
    assert parse_setting(all3.name) == all3  # the normalised name parses back to itself
    assert all3.to_dict()["chunk"] == 32 and all3.to_dict()["prefix_cache"] is False


@pytest.mark.parametrize("bad", ["eager", "tp1,eager", "eager,eager", "eager,tp2x", "eager,eager+graph", "eager,",
                                 "eager,tp2+ep2", "eager,chunk8", "eager,chunk64+chunk32", "eager,chunk", "eager,nocache"])
def test_what_it_refuses(bad):
    with pytest.raises(ValueError):
        parse_settings(bad)


def test_a_served_command_line_gives_its_setting():
    argv = ["python", "-m", "vllm", "--model", "m", "--tensor-parallel-size", "2", "--enable-expert-parallel",
            "--enforce-eager"]
    assert served_setting(argv) == Setting("ep2", 2, True, False)
    assert served_setting(["python", "--model", "m"]) == parse_setting("graph")
    assert served_setting(["python", "--model", "m", "--no-enable-prefix-caching"]) == parse_setting("graph+noprefix")
    assert served_setting(None) is None
