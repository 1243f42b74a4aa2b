#include "bridge/traincommandline.h"

#include "engine/core/atomicfile.h"
#include "engine/core/paths.h"
#include "engine/model/deviceplacement.h"
#include "engine/train/settingschema.h"

#include <QCryptographicHash>
#include <QRegularExpression>

#include <exception>

namespace bridge {

QStringList trainCommandLine(const engine::train::TrainingParams &params, const QString &deviceMapFile)
{
    QStringList words;
    for (const std::string &word : engine::train::trainCommandWords(params, deviceMapFile.toStdString()))
        words << QString::fromStdString(word);
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

} // namespace bridge
