import RegistrationService
import ServiceKit

await ServiceRuntime.main(RegistrationService.self)
