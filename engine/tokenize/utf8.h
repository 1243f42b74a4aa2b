#pragma once
// UTF-8 and Unicode helpers shared by the tokenizer.json pipeline: code point iteration, lossy
// decoding of byte sequences, GPT-2's byte-to-character map, and ICU-backed normalization.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace engine::tokenize::utf8 {

/// Length in bytes of the UTF-8 sequence that starts with `lead` (1 for invalid lead bytes).
int sequenceLength(unsigned char lead);

/// Decodes the code point at `pos` (which must start a valid sequence) and advances `pos`.
char32_t next(std::string_view text, size_t &pos);

/// Appends the UTF-8 encoding of `cp`.
void append(std::string &out, char32_t cp);

/// Byte offset of the first invalid sequence, or npos when `text` is valid UTF-8.
size_t firstInvalid(std::string_view text);

/// Converts bytes to a string, replacing invalid sequences with U+FFFD the way Rust's
/// String::from_utf8_lossy and the WHATWG decoder do (one per maximal invalid subpart).
std::string decodeLossy(std::string_view bytes);

/// GPT-2's reversible byte-to-character map used by ByteLevel pre-tokenizers and decoders.
char32_t byteToChar(unsigned char byte);
/// The byte of a ByteLevel character, or -1 for characters outside the map.
int charToByte(char32_t cp);

/// Unicode White_Space (Rust's char::is_whitespace).
bool isWhitespace(char32_t cp);
/// Letter, mark, number or connector punctuation (regex \w).
bool isWordChar(char32_t cp);
/// General category N* (Rust's char::is_numeric).
bool isNumeric(char32_t cp);
/// ASCII punctuation or general category P* (HF tokenizers' is_punctuation).
bool isPunctuation(char32_t cp);
/// General category Mn (removed by StripAccents).
bool isNonSpacingMark(char32_t cp);

/// Unicode normalization forms.
enum class NormalForm { Nfc, Nfd, Nfkc, Nfkd };
/// Normalizes UTF-8 text with ICU.
std::string normalize(std::string_view text, NormalForm form);
/// Full Unicode lowercase (root locale).
std::string toLower(std::string_view text);

} // namespace engine::tokenize::utf8
