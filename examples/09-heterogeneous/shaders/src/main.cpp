import app.report;

int main()
{
    return app::report();
}
