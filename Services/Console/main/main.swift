import ConsoleService

await ConsoleService.main()
