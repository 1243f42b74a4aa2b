#include "ui/pages/placeholderpage.h"

#include <QLabel>
#include <QVBoxLayout>

namespace ui {

PlaceholderPage::PlaceholderPage(const QString &title, const QString &description, QWidget *parent)
    : QWidget(parent)
{
    auto *heading = new QLabel(title, this);
    heading->setObjectName(QStringLiteral("placeholderTitle"));
    QFont font = heading->font();
    font.setPointSizeF(font.pointSizeF() * 1.5);
    font.setBold(true);
    heading->setFont(font);

    auto *text = new QLabel(description, this);
    text->setObjectName(QStringLiteral("placeholderText"));
    text->setWordWrap(true);
    text->setTextInteractionFlags(Qt::TextSelectableByMouse);
    text->setMaximumWidth(560);

    auto *layout = new QVBoxLayout(this);
    layout->addStretch(1);
    layout->addWidget(heading, 0, Qt::AlignHCenter);
    layout->addSpacing(8);
    layout->addWidget(text, 0, Qt::AlignHCenter);
    layout->addStretch(2);
}

} // namespace ui
