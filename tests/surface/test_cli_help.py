"""Every command's --help documents every option (its meaning, its valid values, its default) from the declarations
the validator uses, so the help and a refusal name the same choices."""

import argparse

import pytest

from bench.cli import _parser
from bench.config import FIELDS, check_value, choices_text, option_help
from bench.errors import ConfigError


def _commands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_every_option_of_every_command_says_what_it_is():
    missing = [f"{name} {'/'.join(a.option_strings) or a.dest}" for name, parser in _commands().items()
               for a in parser._actions if not isinstance(a, argparse._HelpAction) and not (a.help or "").strip()]
    assert missing == []


@pytest.mark.parametrize("name", ["mode", "precision", "protocol", "data", "strategy", "scaling", "backend",
                                  "rendezvous", "framework", "device"])


def test_an_options_help_names_the_values_its_refusal_names(name):
    help_text = option_help(name)
    valid = choices_text(name)
    assert f"valid: {valid}" in help_text
    if name != "device":  # 'cuda:N' is a pattern, checked against this machine's GPUs
        with pytest.raises(ConfigError) as refused:
            check_value(name, "no-such-value")
        assert valid in str(refused.value)


def test_each_run_setting_has_a_meaning_and_numbers_their_range_and_default():
    for name in FIELDS:
        assert option_help(name)  # a KeyError names a setting added without a meaning
    assert "an integer > 0 and <= 1e+06" in option_help("batch_size") and "default: 32" in option_help("batch_size")
    assert "default: 'adaptive'" in option_help("protocol")
    run = _commands()["run"]
    rendered = run.format_help()
    assert "--strategy STRATEGY" in rendered and "allreduce" in rendered and "95% CI" in rendered
