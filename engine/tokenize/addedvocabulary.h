#pragma once
// The added tokens of a tokenizer.json (special tokens such as <|begin_of_text|> and user-added
// words): found in the text before the model sees it, as Hugging Face tokenizers does.

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace engine::tokenize {

/// One entry of tokenizer.json's "added_tokens".
struct AddedToken {
    std::string content;
    int id = -1;
    bool singleWord = false; ///< only matches where it is not inside a word
    bool lstrip = false;     ///< swallows the whitespace before it
    bool rstrip = false;     ///< swallows the whitespace after it
    bool normalized = false; ///< matched in the normalized text rather than the raw text
    bool special = false;    ///< dropped by decode(skipSpecialTokens = true)
};

/// Finds added tokens in text: leftmost match first, the longest one where several start there.
class AddedVocabulary {
public:
    AddedVocabulary() = default;
    explicit AddedVocabulary(std::vector<AddedToken> tokens);

    /// A piece of the text: an added token (id >= 0) or plain text (id == -1).
    struct Segment {
        std::string_view text;
        int id = -1;
    };
    /// Splits `text` at the added tokens whose `normalized` flag equals `normalized`.
    std::vector<Segment> split(std::string_view text, bool normalized) const;

    bool empty() const { return m_tokens.empty(); }
    const std::vector<AddedToken> &tokens() const { return m_tokens; }
    /// The added token with this id, or nullptr.
    const AddedToken *byId(int id) const;
    /// The id of the added token with this content, or -1.
    int idOf(std::string_view content) const;

private:
    /// A byte trie over the contents of one group of tokens.
    struct Trie {
        struct Node {
            std::vector<std::pair<unsigned char, int>> children;
            int token = -1; // index into m_tokens of the token ending here
        };
        std::vector<Node> nodes{Node{}};
        bool firstByte[256] = {};
        void insert(std::string_view text, int token);
        /// Longest token starting at `pos`: (index, length), or (-1, 0).
        std::pair<int, size_t> longestAt(std::string_view text, size_t pos) const;
    };

    std::vector<AddedToken> m_tokens;
    std::unordered_map<int, size_t> m_byId;
    std::unordered_map<std::string, int> m_idByContent;
    Trie m_raw;
    Trie m_normalized;
};

} // namespace engine::tokenize
