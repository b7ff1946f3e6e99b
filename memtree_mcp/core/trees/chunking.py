"""Splitting long content into leaves (the extraction step α): paragraphs, then sentences, then words."""

from __future__ import annotations

import re

# all-MiniLM-L6-v2 reads 256 word pieces; about 1,000 characters of English stay within that.
CHUNK_CHARS = 1000

_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def split_into_chunks(text: str, limit: int = CHUNK_CHARS) -> list[str]:
    """Split ``text`` into ordered pieces of at most ``limit`` characters.

    Paragraphs are kept whole when they fit and packed together while they fit; longer ones are
    cut at sentence ends, then at spaces, and as a last resort inside a word.
    """
    if limit < 1:
        raise ValueError("limit must be positive")
    pieces: list[str] = []
    for paragraph in _PARAGRAPH.split(text.strip()):
        paragraph = paragraph.strip()
        if paragraph:
            pieces.extend(_fit(paragraph, limit))
    return _pack(pieces, limit, "\n\n")


def _fit(paragraph: str, limit: int) -> list[str]:
    if len(paragraph) <= limit:
        return [paragraph]
    sentences: list[str] = []
    for sentence in _SENTENCE_END.split(paragraph):
        if len(sentence) <= limit:
            sentences.append(sentence)
            continue
        words: list[str] = []
        for word in sentence.split():
            words.extend(word[i : i + limit] for i in range(0, len(word), limit))
        sentences.extend(_pack(words, limit, " "))
    return _pack(sentences, limit, " ")


def _pack(pieces: list[str], limit: int, joiner: str) -> list[str]:
    chunks: list[str] = []
    current = ""
    for piece in pieces:
        if not current:
            current = piece
        elif len(current) + len(joiner) + len(piece) <= limit:
            current = current + joiner + piece
        else:
            chunks.append(current)
            current = piece
    if current:
        chunks.append(current)
    return chunks
