from llm_adapt.report.render import cell, inert, num, pct


def test_inert_escapes_html_outside_code_only():
    text = "a <script>x</script> `<b>code</b>` and\n```\n<pre>block</pre>\n```\n<img src=x onerror=y>"
    out = inert(text)
    assert "<script>" not in out and "&lt;img" in out
    assert "`<b>code</b>`" in out and "<pre>block</pre>" in out


def test_cell_and_numbers():
    assert cell("a|b\nc<d & e") == "a\\|b c&lt;d &amp; e"
    assert cell(None) == "-"
    assert num(1234567) == "1,234,567" and num(0.5) == "0.500" and num(float("nan")) == "-" and num(float("inf")) == "inf"
    assert num(1.5e-7) == "1.500e-07" and pct(0.1234) == "12.34%"


def test_subsections_are_numbered_without_gaps_within_each_section():
    from llm_adapt.report.render import renumbered

    text = "## 4. S\n\n### 4.1 a\n\n### 4.3 c\n\n## 9. A\n\n### 9.1 m\n\n### 9.6 v\n\n### 9.9 l\n"
    assert renumbered(text) == "## 4. S\n\n### 4.1 a\n\n### 4.2 c\n\n## 9. A\n\n### 9.1 m\n\n### 9.2 v\n\n### 9.3 l\n"
    assert renumbered("#### 4.3 kept\n") == "#### 4.3 kept\n"
