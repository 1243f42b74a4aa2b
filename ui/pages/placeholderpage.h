#pragma once
// A page whose feature comes in a later version: says so, and what it will do.

#include <QWidget>

namespace ui {

class PlaceholderPage : public QWidget {
    Q_OBJECT

public:
    PlaceholderPage(const QString &title, const QString &description, QWidget *parent = nullptr);
};

} // namespace ui
