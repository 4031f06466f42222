// What tests/refhook's StartupHook reads from its own referenced assembly.
public static class Greeting
{
    public static string Text => "from-hooklib";
}
