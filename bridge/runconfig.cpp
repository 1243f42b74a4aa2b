#include "bridge/runconfig.h"

#include "engine/core/error.h"
#include "engine/core/jsonnesting.h"

#include <nlohmann/json.hpp>

namespace bridge {

bool readTrainingSettings(const QString &text, engine::train::SettingScope scope, const engine::train::TrainingParams &base,
                          engine::train::TrainingParams *out, QString *error, QString *field)
{
    try {
        const std::string json = text.toStdString();
        engine::checkJsonNesting(json, "the settings");
        const nlohmann::json config = nlohmann::json::parse(json);
        if (!config.is_object())
            throw engine::invalidInput("the settings must be a JSON object");
        engine::train::TrainingParams params = base;
        engine::train::readSettingsJson(config.contains("training") ? config["training"] : config, scope, params);
        *out = std::move(params);
        return true;
    } catch (const nlohmann::json::exception &e) {
        if (error)
            *error = QStringLiteral("the settings are not valid JSON: %1").arg(QString::fromStdString(e.what()));
    } catch (const engine::Error &e) {
        if (error)
            *error = QStringLiteral("the settings cannot be read: %1").arg(QString::fromStdString(e.what()));
        if (field)
            *field = QString::fromStdString(e.field());
    }
    return false;
}

QString settingsJson(const engine::train::TrainingParams &params, engine::train::SettingScope scope)
{
    return QString::fromStdString(engine::train::settingsToJson(params, scope).dump());
}

} // namespace bridge
