#include "ui/application.h"

#include "ui/mainwindow.h"
#include "ui/pages/trainpage.h"
#include "ui/widgets/widgetstyle.h"

#include "bridge/enginebridge.h"

#include <QApplication>
#include <QEvent>
#include <QFile>
#include <QStyle>
#include <QStyleFactory>
#include <QTimer>

#include <cstdio>
#include <memory>

namespace ui {
namespace {

Theme g_theme = Theme::System;

bool libtorchMapped()
{
    QFile maps(QStringLiteral("/proc/self/maps"));
    return maps.open(QIODevice::ReadOnly) && maps.readAll().contains("/libtorch");
}

/// Starts loading the engine (libtorch) once the window has been painted: the dynamic loader holds one
/// lock while it maps libtorch's libraries, and the first paint may itself load Qt plugins. With
/// TUNEBENCH_STARTUP_PROBE set it prints "window shown" after that first paint and "engine loaded" (or
/// "engine failed: ...") when the engine is ready, then quits: bench/startup_bench.py times the lines.
class FirstPaintWatcher : public QObject {
public:
    explicit FirstPaintWatcher(MainWindow &window) : QObject(&window), m_window(window)
    {
        m_probe = !qEnvironmentVariableIsEmpty("TUNEBENCH_STARTUP_PROBE");
        if (m_probe) {
            connect(window.bridge(), &bridge::EngineBridge::engineLoaded, this, [this](bool ok) {
                std::printf(ok ? "engine loaded\n" : "engine failed: %s\n", qPrintable(m_window.bridge()->engineError()));
                std::fflush(stdout);
                QCoreApplication::quit();
            });
        }
        window.installEventFilter(this);
    }

protected:
    bool eventFilter(QObject *watched, QEvent *event) override
    {
        if (watched == &m_window && event->type() == QEvent::Paint && !m_seen) {
            m_seen = true;
            QTimer::singleShot(0, this, [this] {
                if (m_probe) {
                    std::printf("window shown (libtorch %s)\n", libtorchMapped() ? "loaded" : "not loaded");
                    std::fflush(stdout);
                }
                m_window.bridge()->loadEngine();
                m_window.removeEventFilter(this);
            });
        }
        return false;
    }

private:
    MainWindow &m_window;
    bool m_probe = false;
    bool m_seen = false;
};

} // namespace

QString themeName(Theme theme)
{
    switch (theme) {
    case Theme::Light: return QStringLiteral("light");
    case Theme::Dark: return QStringLiteral("dark");
    case Theme::System: break;
    }
    return QStringLiteral("system");
}

Theme themeFromName(const QString &name)
{
    if (name == QStringLiteral("light"))
        return Theme::Light;
    if (name == QStringLiteral("dark"))
        return Theme::Dark;
    return Theme::System;
}

QPalette themePalette(Theme theme)
{
    if (theme == Theme::Dark)
        return ui::darkPalette();
    if (theme == Theme::Light) {
        const std::unique_ptr<QStyle> fusion(QStyleFactory::create(QStringLiteral("Fusion")));
        return fusion ? fusion->standardPalette() : QApplication::style()->standardPalette();
    }
    QPalette system; // no role set: resolves to the platform's palette
    system.setResolveMask(0);
    return system;
}

void applyTheme(Theme theme)
{
    g_theme = theme;
    // A palette with no role set makes Qt go back to the platform theme's palette and follow it.
    QApplication::setPalette(themePalette(theme));
}

Theme currentTheme() { return g_theme; }

int runApplication(int &argc, char **argv, const ApplicationOptions &options)
{
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("tunebench"));
    QApplication::setApplicationName(QStringLiteral("tunebench"));
    QApplication::setApplicationDisplayName(QStringLiteral("tunebench"));
    QApplication::setApplicationVersion(QStringLiteral(TUNEBENCH_VERSION));
    QApplication::setDesktopFileName(QStringLiteral("io.tunebench.Tunebench")); // the installed desktop entry (Wayland app id)

    MainWindow window(QString::fromStdString(options.storePath)); // applies the theme kept in the settings
    new FirstPaintWatcher(window);
    window.show();
    if (options.startDemo) {
        window.showPage(MainWindow::Page::Train);
        window.trainPage()->useDemo();
        QTimer::singleShot(0, window.trainPage(), &TrainPage::start);
    }
    return QApplication::exec();
}

} // namespace ui
