"""The detector the Chinese-report test relies on, on plain text: it must find English sentences and
must leave code, quotations, names and URLs alone."""

from tests.report.english import english_sentences


def test_an_english_sentence_in_chinese_text_is_found():
    text = "- LlamaForCausalLM 在 vLLM 0.32.0 中为 native：Direct registration: no code change。"
    assert english_sentences(text) == [text]


def test_an_english_table_cell_is_found():
    assert english_sentences("| 流式输出 | 支持 | 9 chunks; first content after 99 ms; usage chunk: yes |")


def test_chinese_with_code_quotes_names_and_urls_is_clean():
    text = "\n".join([
        "# SmolLM2-135M-Instruct — 适配测评报告： CPU (vLLM CPU build)",
        "运行命令：`vllm serve the model with these flags on the host`。",
        "```\nThis is a code block with an English sentence in it.\n```",
        "回答：「The answer is 4 and it is right.」",
        "见 https://docs.vllm.ai/en/latest/getting_started/installation/cpu.html 的说明",
        "| LlamaRMSNorm (input_layernorm) | RMSNorm: x / rms(x) * w (eps 1e-05) | - |",
        "KV cache 186,368 tokens，top-1 一致率 96.9%",
    ])
    assert english_sentences(text) == []


def test_two_plain_words_are_a_name_not_a_sentence():
    assert english_sentences("平台：vLLM CPU build (installed vLLM)") == []
    assert english_sentences("平台：the installed build", plain_words=3)
