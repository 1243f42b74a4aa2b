#include "app/bridge/traincommandline.h"

#include "engine/core/atomicfile.h"
#include "engine/core/paths.h"
#include "engine/model/deviceplacement.h"

#include <QCryptographicHash>
#include <QRegularExpression>

#include <charconv>
#include <exception>

namespace app {
namespace {

QString qs(const std::string &text) { return QString::fromStdString(text); }

QString targetsText(const engine::model::LoraSettings &lora)
{
    if (!lora.targetRegex.empty())
        return qs(lora.targetRegex);
    QStringList names;
    for (const std::string &name : lora.targets)
        names << qs(name);
    return names.join(QLatin1Char(','));
}

QString namesText(const std::vector<std::string> &names)
{
    QStringList list;
    for (const std::string &name : names)
        list << qs(name);
    return list.join(QLatin1Char(','));
}

} // namespace

QString shortestNumber(double value)
{
    char buffer[64];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    return QString::fromLatin1(buffer, static_cast<qsizetype>(result.ptr - buffer));
}

QStringList trainCommandLine(const engine::train::TrainingParams &p, const QString &deviceMapFile)
{
    using namespace engine::train;
    const TrainingParams d; // the CLI's defaults are TrainingParams' defaults
    QStringList words{QStringLiteral("tunebench")};
    if (!p.storePath.empty())
        words << QStringLiteral("--db") << qs(p.storePath);
    words << QStringLiteral("train");
    auto add = [&words](const char *flag, const QString &value) { words << QString::fromLatin1(flag) << value; };
    auto text = [&](const char *flag, const std::string &value, const std::string &fallback = {}) {
        if (value != fallback)
            add(flag, qs(value));
    };
    auto integer = [&](const char *flag, int64_t value, int64_t fallback) {
        if (value != fallback)
            add(flag, QString::number(value));
    };
    auto number = [&](const char *flag, double value, double fallback) {
        if (value != fallback)
            add(flag, shortestNumber(value));
    };
    auto flag = [&words](const char *name, bool on) {
        if (on)
            words << QString::fromLatin1(name);
    };

    text("--model", p.modelPath);
    text("--data", p.dataPath);
    text("--tokenizer", p.tokenizerPath);
    integer("--steps", p.steps, d.steps);
    number("--lr", p.learningRate, d.learningRate);
    integer("--warmup", p.warmupSteps, d.warmupSteps);
    number("--min-lr-ratio", p.minLearningRateRatio, d.minLearningRateRatio);
    integer("--batch-size", p.batchSize, d.batchSize);
    integer("--seq-len", p.sequenceLength, d.sequenceLength);
    number("--weight-decay", p.weightDecay, d.weightDecay);
    number("--grad-clip", p.gradClipNorm, d.gradClipNorm);
    integer("--threads", p.threads, d.threads);
    text("--device", p.device, d.device);
    if (p.autoDeviceMap)
        add("--device-map", QStringLiteral("auto"));
    else if (!p.devicePlacement.empty())
        add("--device-map", deviceMapFile.isEmpty() ? QStringLiteral("DEVICE_MAP.json") : deviceMapFile);
    if (p.seed != d.seed)
        add("--seed", QString::number(p.seed));
    text("--name", p.runName);
    text("--output", p.outputDir);
    flag("--no-save", !p.saveModel);
    if (p.method == TrainingMethod::Lora) {
        add("--method", QString::fromLatin1(methodName(p.method)));
        integer("--lora-r", p.lora.r, d.lora.r);
        number("--lora-alpha", p.lora.alpha, d.lora.alpha);
        number("--lora-dropout", p.lora.dropout, d.lora.dropout);
        if (const QString targets = targetsText(p.lora); targets != targetsText(d.lora))
            add("--lora-targets", targets);
        flag("--rslora", p.lora.rslora);
        if (!p.lora.modulesToSave.empty())
            add("--modules-to-save", namesText(p.lora.modulesToSave));
    }
    if (p.optimizer != d.optimizer)
        add("--optimizer", QString::fromLatin1(optimizerName(p.optimizer)));
    if (p.optimizer == OptimizerKind::Sgd)
        number("--momentum", p.momentum, d.momentum);
    if (p.schedule != d.schedule)
        add("--schedule", QString::fromLatin1(scheduleName(p.schedule)));
    integer("--epochs", p.epochs, d.epochs);
    integer("--grad-accum", p.gradAccumulation, d.gradAccumulation);
    if (p.precision != d.precision)
        add("--precision", QString::fromLatin1(precisionName(p.precision)));
    flag("--checkpointing", p.gradientCheckpointing);
    text("--eval-data", p.evalDataPath);
    number("--val-fraction", p.valFraction, d.valFraction);
    integer("--eval-every", p.evalEvery, d.evalEvery);
    integer("--eval-batches", p.evalBatches, d.evalBatches);
    integer("--save-every", p.saveEvery, d.saveEvery);
    integer("--keep", p.keepCheckpoints, d.keepCheckpoints);
    text("--resume", p.resumeFrom);
    text("--sample", p.samplePrompt);
    integer("--sample-tokens", p.sampleTokens, d.sampleTokens);
    if (p.skipBadLines)
        add("--bad-lines", QStringLiteral("skip"));
    if (p.nonFinite == NonFinitePolicy::Skip)
        add("--on-nan", QStringLiteral("skip"));
    if (!p.inspectGuard)
        add("--guard", QStringLiteral("off"));
    return words;
}

QString shellCommand(const QStringList &words)
{
    static const QRegularExpression plain(QStringLiteral("^[A-Za-z0-9_./:=,+@%-]+$"));
    QStringList quoted;
    for (const QString &word : words) {
        if (plain.match(word).hasMatch())
            quoted << word;
        else
            quoted << QLatin1Char('\'') + QString(word).replace(QLatin1Char('\''), QStringLiteral("'\\''")) + QLatin1Char('\'');
    }
    return quoted.join(QLatin1Char(' '));
}

QString writeDeviceMapFile(const std::vector<std::pair<std::string, std::string>> &placement, QString *error)
{
    try {
        const std::string json = engine::model::DevicePlacement{placement}.toJson();
        const QByteArray hash = QCryptographicHash::hash(QByteArray::fromStdString(json), QCryptographicHash::Sha256).toHex().left(12);
        const std::filesystem::path path = engine::cacheDir() / "device-maps" / ("device-map-" + hash.toStdString() + ".json");
        engine::writeFileAtomically(path, json + "\n");
        return QString::fromStdString(path.string());
    } catch (const std::exception &e) {
        if (error)
            *error = QString::fromStdString(e.what());
        return {};
    }
}

} // namespace app
