/// JOSE: JWS, JWT, JWK and JWKS (see the files of this module).
