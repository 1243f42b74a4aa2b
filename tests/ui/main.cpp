// The ui tests' main: isolates every XDG folder in a temporary directory, then creates the
// QApplication (offscreen unless told otherwise) before running the tests.

#include <QApplication>
#include <QTemporaryDir>

#include <gtest/gtest.h>

int main(int argc, char **argv)
{
    QTemporaryDir root(QDir::tempPath() + QStringLiteral("/tunebench-ui-test-XXXXXX"));
    if (!root.isValid())
        return 2;
    for (const char *variable : {"XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"}) {
        const QString dir = root.path() + QLatin1Char('/') + QString::fromLatin1(variable).toLower();
        QDir().mkpath(dir);
        qputenv(variable, dir.toLocal8Bit());
    }
    qputenv("XDG_RUNTIME_DIR", root.path().toLocal8Bit());
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");

    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("tunebench-tests"));
    QApplication::setApplicationName(QStringLiteral("tunebench-tests"));

    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
