#include "ui/application.h"

#include "ui/mainwindow.h"
#include "ui/pages/trainpage.h"
#include "ui/widgets/widgetstyle.h"

#include <QApplication>
#include <QStyle>
#include <QStyleFactory>
#include <QTimer>

#include <memory>

namespace ui {
namespace {

Theme g_theme = Theme::System;

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
    window.show();
    if (options.startDemo) {
        window.showPage(MainWindow::Page::Train);
        window.trainPage()->useDemo();
        QTimer::singleShot(0, window.trainPage(), &TrainPage::start);
    }
    return QApplication::exec();
}

} // namespace ui
