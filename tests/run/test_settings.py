"""The differential run's settings: the words `--settings` takes, their labels and features, and the setting a
served command line shows (pure)."""

import pytest

from llm_adapt.deploy_settings import Setting, parse_setting, parse_settings, served_setting


def test_the_words_and_their_labels():
    eager, graph, tp2, ep2, both = parse_settings("eager,graph,tp2,ep2,graph+tp2")
    assert [s.label for s in (eager, graph, tp2, ep2, both)] == ["eager", "graph", "TP=2", "EP=2", "TP=2 + graph"]
    assert (ep2.tp, ep2.ep, ep2.features) == (2, True, frozenset({"tp", "ep"}))
    assert both.name == "tp2+graph" and both.mode == "graph" and eager.features == frozenset()


@pytest.mark.parametrize("bad", ["eager", "tp1,eager", "eager,eager", "eager,tp2x", "eager,eager+graph", "eager,",
                                 "eager,tp2+ep2"])
def test_what_it_refuses(bad):
    with pytest.raises(ValueError):
        parse_settings(bad)


def test_a_served_command_line_gives_its_setting():
    argv = ["python", "-m", "vllm", "--model", "m", "--tensor-parallel-size", "2", "--enable-expert-parallel",
            "--enforce-eager"]
    assert served_setting(argv) == Setting("ep2", 2, True, False)
    assert served_setting(["python", "--model", "m"]) == parse_setting("graph")
    assert served_setting(None) is None
