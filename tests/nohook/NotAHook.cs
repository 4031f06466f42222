// A class library with an Initialize method, but on a type that is not StartupHook: the
// runtime's StartupHookProvider finds no type of that name and refuses the hook.
internal static class NotAHook
{
    public static void Initialize()
    {
    }
}
