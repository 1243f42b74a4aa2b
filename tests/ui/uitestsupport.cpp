#include "uitestsupport.h"

#include "engine/core/paths.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRandomGenerator>

#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

namespace uitest {

QString scratchDir()
{
    const QString dir = QDir::cleanPath(qEnvironmentVariable("XDG_DATA_HOME") + QStringLiteral("/../scratch"));
    QDir().mkpath(dir);
    return dir;
}

QString smallCorpus(qint64 bytes)
{
    const QString path = scratchDir() + QStringLiteral("/corpus-%1.txt").arg(bytes);
    if (QFile::exists(path))
        return path;
    QFile in(QString::fromStdString(engine::demoCorpusPath().string()));
    if (!in.open(QIODevice::ReadOnly))
        return {};
    QByteArray text = in.read(bytes);
    if (const qsizetype end = text.lastIndexOf('\n'); end > 0)
        text.truncate(end + 1);
    QFile out(path);
    if (!out.open(QIODevice::WriteOnly) || out.write(text) != text.size())
        return {};
    return path;
}

QString nanModelFolder()
{
    const QString dir = scratchDir() + QStringLiteral("/nan-model");
    if (QFile::exists(dir + QStringLiteral("/model.safetensors")))
        return dir;
    QDir().mkpath(dir);
    constexpr int vocab = 32, width = 8, inner = 16;
    const QJsonObject config{{QStringLiteral("model_type"), QStringLiteral("llama")},
                             {QStringLiteral("vocab_size"), vocab},
                             {QStringLiteral("hidden_size"), width},
                             {QStringLiteral("intermediate_size"), inner},
                             {QStringLiteral("num_hidden_layers"), 1},
                             {QStringLiteral("num_attention_heads"), 2},
                             {QStringLiteral("num_key_value_heads"), 2},
                             {QStringLiteral("max_position_embeddings"), 64},
                             {QStringLiteral("tie_word_embeddings"), true}};
    QFile configFile(dir + QStringLiteral("/config.json"));
    if (!configFile.open(QIODevice::WriteOnly))
        return {};
    configFile.write(QJsonDocument(config).toJson());
    configFile.close();

    // (name, shape): every parameter of that model; norms are ones (the final one with a NaN), the rest small noise.
    const std::vector<std::pair<QString, std::vector<int>>> tensors = {
        {QStringLiteral("model.embed_tokens.weight"), {vocab, width}},
        {QStringLiteral("model.layers.0.input_layernorm.weight"), {width}},
        {QStringLiteral("model.layers.0.self_attn.q_proj.weight"), {width, width}},
        {QStringLiteral("model.layers.0.self_attn.k_proj.weight"), {width, width}},
        {QStringLiteral("model.layers.0.self_attn.v_proj.weight"), {width, width}},
        {QStringLiteral("model.layers.0.self_attn.o_proj.weight"), {width, width}},
        {QStringLiteral("model.layers.0.post_attention_layernorm.weight"), {width}},
        {QStringLiteral("model.layers.0.mlp.gate_proj.weight"), {inner, width}},
        {QStringLiteral("model.layers.0.mlp.up_proj.weight"), {inner, width}},
        {QStringLiteral("model.layers.0.mlp.down_proj.weight"), {width, inner}},
        {QStringLiteral("model.norm.weight"), {width}},
    };
    QJsonObject header;
    QByteArray data;
    QRandomGenerator random(7);
    for (const auto &[name, shape] : tensors) {
        int count = 1;
        QJsonArray dims;
        for (int d : shape) {
            count *= d;
            dims.append(d);
        }
        const qsizetype begin = data.size();
        for (int i = 0; i < count; ++i) {
            float value = shape.size() == 1 ? 1.0f : static_cast<float>(random.generateDouble() * 0.2 - 0.1);
            if (name == QStringLiteral("model.norm.weight") && i == 3)
                value = std::nanf("");
            char bytes[4];
            std::memcpy(bytes, &value, 4); // little-endian, as safetensors stores
            data.append(bytes, 4);
        }
        header.insert(name, QJsonObject{{QStringLiteral("dtype"), QStringLiteral("F32")},
                                        {QStringLiteral("shape"), dims},
                                        {QStringLiteral("data_offsets"), QJsonArray{static_cast<qint64>(begin),
                                                                                    static_cast<qint64>(data.size())}}});
    }
    QByteArray json = QJsonDocument(header).toJson(QJsonDocument::Compact);
    while (json.size() % 8 != 0)
        json.append(' ');
    const quint64 length = static_cast<quint64>(json.size());
    QFile weights(dir + QStringLiteral("/model.safetensors"));
    if (!weights.open(QIODevice::WriteOnly))
        return {};
    char prefix[8];
    std::memcpy(prefix, &length, 8);
    weights.write(prefix, 8);
    weights.write(json);
    weights.write(data);
    weights.close();

    QFile ids(dir + QStringLiteral("/ids.jsonl"));
    if (!ids.open(QIODevice::WriteOnly))
        return {};
    for (int line = 0; line < 16; ++line) {
        QJsonArray row;
        for (int i = 0; i < 17; ++i)
            row.append((line * 5 + i * 3) % vocab);
        ids.write(QJsonDocument(QJsonObject{{QStringLiteral("input_ids"), row}}).toJson(QJsonDocument::Compact) + "\n");
    }
    return dir;
}

} // namespace uitest
