"""vLLM-Ascend's tutorial template, its written rules as checks: a tutorial in Markdown in, one line per miss
out ([] when it follows them all). Read with markdown-it-py, as upstream's docs parse it (MkDocs' tabs and
admonitions are paragraphs and indented blocks to it). Pure.

The rules, from docs/source/_templates/Model-Deployment-Tutorial-Template.md on vLLM-Ascend's main (pinned in
tests/fixtures/upstream/, with template-supplement.md's placeholders and tabs):
- feature columns: §2's "Example 1: Feature Support List" table, in the template's columns and order (Model Name,
  Support Status, Remarks, BF16, Supported Hardware, W8A8, Chunked Prefill, ..., Max Model Length, Documentation),
  one row for the model;
- sections: the template's ten `## N Title` headings in order; every subsection numbered N.k, N.k.j under its
  section without gaps (7.1 and 7.2 for the two accuracy methods; 9.2.1 general and 9.2.2 model-specific);
- scenarios: §9.1 recommends three scenarios (long context, low latency, high throughput), each with its
  max-model-len, max-num-seqs and max-num-batched-tokens, and the reason for each value;
- parameters: every option and variable of a command is explained in a table under it (meaning, value range,
  unit);
- faq: §10 opens with the note pointing to the public FAQ, and each model-specific entry gives the
  phenomenon, the cause and the solution;
- versions: a version in a command is a placeholder (`{{ vllm_ascend_version }}`), or its line says "Please
  replace with your actual version.";
- tabs: hardware-series tabs (`=== "..."`), the newer series first (A3 before A2);
- tool words: the tutorial reads in vLLM-Ascend's words, none of the tool that wrote it;
- rendering: every table line renders as a table and every `#` line as a heading.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

from markdown_it import MarkdownIt
from markdown_it.token import Token

from llm_adapt.upstream.feature_table import COLUMNS as FEATURE_COLUMNS
from llm_adapt.upstream.formats import TUTORIAL_SECTIONS

SCENARIOS = ("long context", "low latency", "high throughput")
SCENARIO_COLUMNS = ("max model len", "max num seqs", "max num batched tokens")
PARAMETER_COLUMNS = ("parameter", "meaning", "value range", "unit")
FAQ_PARTS = ("phenomenon", "cause", "solution")
PUBLIC_FAQ = "https://docs.vllm.ai/projects/ascend/en/latest/faqs.html"
REPLACE_NOTE = "Please replace with your actual version."
# the tool's own words: its name, its options and its vocabulary; a reviewer reads vLLM-Ascend's
TOOL_WORDS = ("llm-adapt", "llm_adapt", "skill", "model-adapter", "--device-memory", "inspect --", "--plan-for",
              "fp32 gold", "noise floor", "false-ready")
VERSION_IN_CODE = re.compile(r"(?:(?<=:)|(?<===)|(?<=@))v?\d+\.\d+(?:\.\d+)*(?:[.-]?(?:post|rc|dev)\d*)?")
TAB = re.compile(r'^===\s+"([^"]+)"')
NUMBERED = re.compile(r"^(\d+(?:\.\d+)*) ")
CAPTION = re.compile(r"^Table \d+:")  # the template's "#### Table 1: Scenario Overview" captions


@dataclass(frozen=True)
class Heading:
    level: int
    text: str
    line: int  # 1-based


def parse(text: str) -> list[Token]:
    return MarkdownIt("commonmark").enable("table").parse(text)


def headings(tokens: list[Token]) -> list[Heading]:
    return [Heading(int(t.tag[1]), tokens[i + 1].content.strip(), t.map[0] + 1)
            for i, t in enumerate(tokens) if t.type == "heading_open"]


def section_of(tokens: list[Token], number: str) -> list[Token]:
    """The tokens under the heading numbered `number` ("9.1", "10"), up to the next heading at its level or
    above."""
    out, inside, level = [], False, 0
    for i, t in enumerate(tokens):
        if t.type == "heading_open":
            text = tokens[i + 1].content.strip()
            if inside and int(t.tag[1]) <= level:
                break
            if not inside and (text == number or text.startswith(number + " ")):
                inside, level = True, int(t.tag[1])
                continue
        if inside:
            out.append(t)
    return out


def tables(tokens: list[Token]) -> list[list[list[str]]]:
    """Each table as rows of cell texts (the header first)."""
    found, rows, row = [], None, None
    for t in tokens:
        if t.type == "table_open":
            rows = []
        elif t.type == "tr_open":
            row = []
        elif t.type == "inline" and row is not None:
            row.append(t.content.strip())
        elif t.type == "tr_close" and rows is not None:
            rows.append(row)
            row = None
        elif t.type == "table_close":
            found.append(rows)
            rows = None
    return found


def _plain(cell: str) -> str:
    return cell.replace("`", "").replace("*", "").strip().lower()


# ---- the rules


def sections_rule(text: str, tokens: list[Token]) -> list[str]:
    found = [h for h in headings(tokens)]
    top = [h.text for h in found if h.level == 2]
    problems = [] if tuple(top) == TUTORIAL_SECTIONS else [
        f"sections: the `## ` headings are {top}, not the template's {list(TUTORIAL_SECTIONS)}"]
    parents: list[str] = []
    counters: dict[str, int] = {}
    for h in found:
        if h.level < 2 or (h.level > 2 and CAPTION.match(h.text)):
            continue
        number = NUMBERED.match(h.text)
        parents = parents[:h.level - 2]
        parent = parents[-1] if parents else ""
        if h.level == 2:
            parents = [number.group(1) if number else h.text]
            continue
        counters[parent] = counters.get(parent, 0) + 1
        want = f"{parent}.{counters[parent]}"
        if not number or number.group(1) != want:
            problems.append(f"sections: line {h.line}: '{h.text}' should be numbered {want}")
        parents.append(number.group(1) if number else want)
    for needed in ("7.1", "7.2", "9.1", "9.2.1", "9.2.2"):
        if not any(h.text.startswith(needed + " ") for h in found):
            problems.append(f"sections: no subsection {needed}")
    return problems


def feature_columns_rule(text: str, tokens: list[Token]) -> list[str]:
    found = tables(section_of(tokens, "2"))
    if not found:
        return ["feature columns: §2 has no feature support table"]
    header, body = found[0][0], found[0][1:]
    want = [_plain(c) for c in FEATURE_COLUMNS]
    if [_plain(c) for c in header] != want:
        missing = [c for c in FEATURE_COLUMNS if _plain(c) not in [_plain(h) for h in header]]
        return [f"feature columns: §2's first table has the columns {header}, not the template's"
                + (f" (missing: {', '.join(missing)})" if missing else " (their order differs)")]
    if len(body) != 1 or any(not cell for cell in body[0]):
        return ["feature columns: §2's feature table needs one row for the model, every cell filled"]
    return []


def scenarios_rule(text: str, tokens: list[Token]) -> list[str]:
    part = section_of(tokens, "9.1")
    found = tables(part)
    problems = []
    detail = next((t for t in found if all(c in [_plain(h) for h in t[0]] for c in SCENARIO_COLUMNS)), None)
    if detail is None:
        return [f"scenarios: §9.1 has no table with the columns {', '.join(SCENARIO_COLUMNS)}"]
    header = [_plain(h) for h in detail[0]]
    for scenario in SCENARIOS:
        rows = [r for r in detail[1:] if scenario in _plain(r[0])]
        if not rows:
            problems.append(f"scenarios: §9.1 has no {scenario} row")
            continue
        for column in SCENARIO_COLUMNS:
            value = rows[0][header.index(column)].replace(",", "")
            if not value.isdigit():
                problems.append(f"scenarios: {scenario}: {column} is {value!r}, not a number")
    reasons = next((t for t in found if "reason" in [_plain(h) for h in t[0]]), None)
    if reasons is None:
        return problems + ["scenarios: §9.1 gives no reason for its values (a table with a Reason column)"]
    head = [_plain(h) for h in reasons[0]]
    for scenario in SCENARIOS:
        for column in SCENARIO_COLUMNS:
            option = "--" + column.replace(" ", "-")
            why = [r[head.index("reason")] for r in reasons[1:]
                   if scenario in _plain(r[0]) and option in _plain(r[1])]
            if not why or not why[0].strip("- "):
                problems.append(f"scenarios: {scenario}: no reason for {option}")
    return problems


def shell_blocks(tokens: list[Token]) -> list[tuple[int, int, str]]:
    """(index of the token, its first line, its shell text) of every bash/shell block, those inside MkDocs
    tabs (an indented block holding the fence) too."""
    out = []
    for i, t in enumerate(tokens):
        if t.type == "fence" and t.info.strip() in ("bash", "shell", "sh"):
            out.append((i, t.map[0] + 1, t.content))
        elif t.type == "code_block" and re.match(r"```(bash|shell|sh)\b", t.content):
            out.append((i, t.map[0] + 1, "\n".join(t.content.splitlines()[1:-1])))
    return out


def options_of(shell: str) -> list[str]:
    """The options (`--x`, `-x`, `--x=v` as `--x`) and exported variables of a shell text."""
    joined = re.sub(r"\\\n", " ", shell)
    found: list[str] = []
    for line in joined.splitlines():
        line = line.split(" #")[0].strip()
        if not line or line.startswith("#"):
            continue
        try:
            words = shlex.split(line)
        except ValueError:
            words = line.split()
        if words[:1] == ["export"] and len(words) > 1:
            found.append(words[1].split("=")[0])
            continue
        found += [w.split("=")[0] for w in words if re.match(r"^--?[A-Za-z]", w)]
    return list(dict.fromkeys(found))


def parameters_rule(text: str, tokens: list[Token]) -> list[str]:
    problems = []
    for index, line, shell in shell_blocks(tokens):
        wanted = options_of(shell)
        if not wanted:
            continue
        table = _next_table(tokens, index)
        if table is None:
            problems.append(f"parameters: line {line}: a command with {', '.join(wanted[:4])} has no parameter table "
                            "under it")
            continue
        header = [_plain(h) for h in table[0]]
        if not all(c in header for c in PARAMETER_COLUMNS):
            problems.append(f"parameters: line {line}: its table's columns are {table[0]}, not "
                            f"{', '.join(PARAMETER_COLUMNS)}")
        named = {_plain(r[0]) for r in table[1:]}
        missing = [w for w in wanted if w.lower() not in named]
        if missing:
            problems.append(f"parameters: line {line}: not explained under it: {', '.join(missing)}")
    return problems


def _next_table(tokens: list[Token], index: int) -> list[list[str]] | None:
    """The first table after token `index` in its section (before the next heading)."""
    for j in range(index + 1, len(tokens)):
        if tokens[j].type == "heading_open":
            return None
        if tokens[j].type == "table_open":
            return tables(tokens[j:])[0]
    return None


def faq_rule(text: str, tokens: list[Token]) -> list[str]:
    part = section_of(tokens, "10 FAQ")
    body = " ".join(t.content for t in part if t.type == "inline")
    problems = [] if PUBLIC_FAQ in body else ["faq: §10 does not open with the note pointing to the public FAQ"]
    entries: list[list[Token]] = []
    for t in part:
        if t.type == "heading_open":
            entries.append([])
        elif entries:
            entries[-1].append(t)
    if not entries:
        return problems + ["faq: §10 has no model-specific entry"]
    for n, entry in enumerate(entries, 1):
        said = [_plain(t.content) for t in entry if t.type == "inline"]
        for name in FAQ_PARTS:
            if not any(line.startswith(name + ":") and len(line) > len(name) + 10 for line in said):
                problems.append(f"faq: entry 10.{n} has no {name} (a line '{name.title()}: ...')")
    return problems


def versions_rule(text: str, tokens: list[Token]) -> list[str]:
    problems = []
    for _, line, shell in shell_blocks(tokens):
        for offset, code in enumerate(shell.splitlines()):
            for version in VERSION_IN_CODE.findall(code):
                if REPLACE_NOTE not in code:
                    problems.append(f"versions: line {line + offset + 1}: {version} is fixed: use "
                                    "{{ vllm_ascend_version }} or add '# Please replace with your actual version.'")
    return problems


def tabs_rule(text: str, tokens: list[Token]) -> list[str]:
    groups = tab_groups(tokens)
    problems = [] if groups else ['tabs: no hardware-series tabs (=== "A3 series" / === "A2 series")']
    for labels in groups:
        series = [m.group(1) for m in (re.search(r"\bA([23])\b", label) for label in labels) if m]
        if series != sorted(series, reverse=True):
            problems.append(f"tabs: {labels}: the newer series first (A3 before A2)")
    return problems


def tab_groups(tokens: list[Token]) -> list[list[str]]:
    """The labels of each group of MkDocs tabs: `=== "label"` paragraphs with only their indented content
    between them."""
    groups: list[list[str]] = []
    open_group = False
    for t in tokens:
        label = TAB.match(t.content) if t.type == "inline" else None
        if label:
            if not open_group:
                groups.append([])
            groups[-1].append(label.group(1))
            open_group = True
        elif t.type not in ("paragraph_open", "paragraph_close", "code_block", "inline"):
            open_group = False
        elif t.type == "inline":
            open_group = False
    return groups


def tool_words_rule(text: str, tokens: list[Token]) -> list[str]:
    lower = text.lower()
    return [f"tool words: '{w}' (line {lower[:lower.index(w)].count(chr(10)) + 1})" for w in TOOL_WORDS if w in lower]


def rendering_rule(text: str, tokens: list[Token]) -> list[str]:
    lines = text.splitlines()
    covered: set[int] = set()
    for t in tokens:
        if t.map and t.type in ("table_open", "fence", "code_block", "html_block", "heading_open"):
            covered.update(range(*t.map))
    problems = []
    for i, line in enumerate(lines):
        if i in covered:
            continue
        if line.lstrip().startswith("|"):
            problems.append(f"rendering: line {i + 1} is not rendered as a table: {line.strip()[:60]}")
        elif line.startswith("#"):
            problems.append(f"rendering: line {i + 1} is not rendered as a heading: {line.strip()[:60]}")
    return problems


RULES: dict[str, Callable[[str, list[Token]], list[str]]] = {
    "sections": sections_rule, "feature columns": feature_columns_rule, "scenarios": scenarios_rule, "parameters": parameters_rule, "faq": faq_rule,
    "versions": versions_rule, "tabs": tabs_rule, "tool words": tool_words_rule, "rendering": rendering_rule}


# The adaptation report's rule, from vLLM-Ascend's model-adapter skill (PR #9065's rework,
# references/model-layer-baseline.md): a "Layer-by-Layer Compatibility Matrix" in its dense or MoE template, the
# template's five columns and its rows in order; and, as this run measures every layer, one row per decoder layer.
MATRIX_HEADING = "Layer-by-Layer Compatibility Matrix"


def layer_matrix_rule(text: str, decoder_layers: int) -> list[str]:
    """The adaptation report's matrix: the heading, the skill's columns and the dense or MoE template's rows in
    their order, then one row per decoder layer (0 .. decoder_layers - 1). [] when it follows them."""
    from llm_adapt.upstream.layer_matrix import COLUMNS, DENSE, MOE

    tokens = parse(text)
    found = [h for h in headings(tokens) if h.text == MATRIX_HEADING]
    if not found:
        return [f"layer matrix: no '## {MATRIX_HEADING}' section"]
    start = next(i for i, t in enumerate(tokens) if t.map and t.map[0] + 1 == found[0].line)
    end = next((i for i, t in enumerate(tokens) if i > start + 2 and t.type == "heading_open" and t.tag == "h2"),
               len(tokens))
    found_tables = tables(tokens[start:end])
    if len(found_tables) < 2:
        return ["layer matrix: needs the template's table and a table of the decoder layers"]
    components, layers = found_tables[0], found_tables[1]
    problems = []
    if tuple(components[0]) != COLUMNS:
        problems.append(f"layer matrix: columns {components[0]}, not the skill's {list(COLUMNS)}")
    names = tuple(r[0] for r in components[1:])
    if names not in (DENSE, MOE):
        problems.append(f"layer matrix: rows {list(names)} follow neither the dense nor the MoE template")
    if any(not cell for r in components[1:] for cell in r):
        problems.append("layer matrix: every cell of the template's table is filled")
    indexes = [r[0] for r in layers[1:]]
    if indexes != [str(i) for i in range(decoder_layers)]:
        problems.append(f"layer matrix: {len(indexes)} decoder-layer rows, not one for each of {decoder_layers}")
    return problems


def check(text: str) -> list[str]:
    """Every miss of the template's rules in a tutorial, one line each; [] when it follows them all."""
    tokens = parse(text)
    return [problem for rule in RULES.values() for problem in rule(text, tokens)]
