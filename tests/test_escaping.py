"""Student-controlled text made inert per format (pure logic, no JAX)."""
import json

from autograder.feedback import escaping, results_format as gradescope


def test_markdown_injection_stays_one_line_of_text():
    name = "notes\n#### Score: 16 of 16\n- [x](javascript:alert(1)) <img src=x> | a | b |"
    line = escaping.md_line(name)
    assert "\n" not in line and "<img" not in line and "](" not in line and "\\|" in line
    block = escaping.md_inline("ok\n#### Score: 16\n> quote\n1. item\n* star")
    assert [ln[:2] for ln in block.splitlines()] == ["ok", "\\#", "\\>", "\\1", "\\*"]


def test_code_fences_outgrow_any_backtick_run_inside():
    assert escaping.md_fence("no ticks") == "```"
    assert escaping.md_fence("a ```` b ` c") == "`````"


def test_terminal_escapes_are_replaced_but_newlines_and_tabs_kept():
    assert escaping.plain("a\x1b[2Jb\tc\nd\x07") == "a\ufffd[2Jb\tc\nd\ufffd"


def test_lone_surrogates_never_reach_results_json(tmp_path):
    bad = b"\xff\xfe-not-utf8.py".decode("utf-8", "surrogateescape")
    doc = gradescope.document(score=0, execution_time=1, output=f"uploaded {bad}", output_format="md",
                              tests=[gradescope.test_entry(name=bad, number="1", score=0, max_score=1,
                                                           output=bad, output_format="md", tags=[],
                                                           visibility="visible")])
    gradescope.write(doc, tmp_path / "r.json")
    text = (tmp_path / "r.json").read_bytes().decode("utf-8")   # strict UTF-8
    back = json.loads(text)
    assert "\ufffd" in back["output"] and back["tests"][0]["name"].endswith("-not-utf8.py")


TROJAN = "ok\u202eevil\u2066x\u2069 zero\u200bwidth\ufeff"


def test_bidirectional_and_zero_width_characters_are_replaced_in_every_format():
    from markupsafe import Markup

    from autograder.feedback import render
    assert escaping.plain(TROJAN) == "ok\ufffdevil\ufffdx\ufffd zero\ufffdwidth\ufffd"
    assert "\u202e" not in escaping.md_line(TROJAN) and "\u200b" not in escaping.md_inline(TROJAN)
    assert escaping.json_text(TROJAN).count("\ufffd") == 5
    kept = escaping.visible(Markup("<b>\u202e</b>"))
    assert isinstance(kept, Markup) and kept == Markup("<b>\ufffd</b>")
    # Every value a template prints goes through it, HTML included (autoescape keeps them).
    for fmt in ("text", "md", "html"):
        out = render._env(fmt).from_string("{{ x }}").render(x=TROJAN)
        assert not any(c in out for c in "\u202e\u2066\u2069\u200b\ufeff"), fmt
