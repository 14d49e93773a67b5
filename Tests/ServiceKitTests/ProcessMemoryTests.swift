import Platform
import ServiceKit
import Testing

/// The malloc arena cap each service applies at start-up, and when it leaves glibc alone.
@Suite struct ProcessMemoryTests {
    @Test func defaultsToTheCoresWithAFloorOfTwo() throws {
        #expect(try ProcessMemory.arenaLimit(Environment([:]), cores: 2) == 2)
        #expect(try ProcessMemory.arenaLimit(Environment([:]), cores: 1) == 2)
        #expect(try ProcessMemory.arenaLimit(Environment([:]), cores: 6) == 6)
    }

    @Test func theVariableSetsItAndZeroLeavesGlibcsDefault() throws {
        #expect(try ProcessMemory.arenaLimit(Environment(["SIGNET_MALLOC_ARENAS": "4"]), cores: 2) == 4)
        #expect(try ProcessMemory.arenaLimit(Environment(["SIGNET_MALLOC_ARENAS": "0"]), cores: 2) == nil)
    }

    @Test(arguments: [["MALLOC_ARENA_MAX": "8"], ["GLIBC_TUNABLES": "glibc.malloc.tcache_count=0:glibc.malloc.arena_max=3"]])
    func glibcsOwnSettingWins(values: [String: String]) throws {
        var values = values
        values["SIGNET_MALLOC_ARENAS"] = "1"
        #expect(try ProcessMemory.arenaLimit(Environment(values), cores: 2) == nil)
    }

    @Test(arguments: ["-1", "1025", "many"])
    func anInvalidValueIsAConfigurationError(value: String) {
        let error = #expect(throws: Environment.ConfigurationError.self) {
            try ProcessMemory.arenaLimit(Environment(["SIGNET_MALLOC_ARENAS": value]), cores: 2)
        }
        #expect(error?.variable == "SIGNET_MALLOC_ARENAS")
    }
}
